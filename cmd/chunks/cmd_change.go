package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func changeCommand() *cli.Command {
	return &cli.Command{
		Name:  "change",
		Usage: "declare, list, show and drop changes of your own tables (docs/your-own-tables.md)",
		Description: "A declared change is one change of one of your tables, declared once as data (a JSON file,\n" +
			"never SQL) by the owner of the chunks schema: {\"name\", \"table\", \"key\", \"tenant\",\n" +
			"\"version\", \"expect\", \"when\", \"set\", \"set_from_target\"}. The server checks it against the\n" +
			"catalog and generates its function; jobs of it are registered with chunks register --change\n" +
			"and run as any job (run, drain, worker, pause, report).\n\n" +
			"Example:\n  chunks --schema lab change define hold_payment.json\n  chunks --schema lab change show hold_payment",
		Subcommands: []*cli.Command{
			{
				Name:      "define",
				Usage:     "declare a change from its JSON definition; says whether it was new",
				UsageText: "chunks change define [--dsn DSN] [--schema S] [--json] FILE",
				Description: "FILE (- reads stdin) is read strictly: one JSON object, no field the definition does not\n" +
					"name, no key twice, no \\u0000. The same definition again changes nothing (exit 0); another one\n" +
					"under the same name is a conflict (exit 3), also when it is defined by another session at the\n" +
					"same time; a definition the catalog refuses exits 2, naming the table, column or constant at\n" +
					"fault. Only the owner of the chunks schema may define a change. --json prints {\"name\",\n" +
					"\"created\"}.\n\n" +
					"Example:\n  chunks --schema lab change define hold_payment.json",
				Action: action(parseChangeDefine, runChangeDefine),
			},
			{
				Name:      "list",
				Usage:     "list the declared changes (read-only)",
				UsageText: "chunks change list [--dsn DSN] [--schema S] [--json]",
				Description: "One line each: name, table, jobs registered with it, the digest of its definition and who\n" +
					"defined it when. --json prints the list, [{\"name\", \"table\", \"digest\", \"defined_at\",\n" +
					"\"defined_by\", \"jobs\"}, ...].\n\n" +
					"Example:\n  chunks --schema lab change list",
				Action: action(parseNoArgs, runChangeList),
			},
			{
				Name:      "show",
				Usage:     "show a declared change for review: its definition, digest, jobs and generated SQL (read-only)",
				UsageText: "chunks change show [--dsn DSN] [--schema S] [--json] NAME",
				Description: "Prints the definition, its digest (a job records it in its approval), who defined it when,\n" +
					"how many jobs it has, and the source of the function chunks generated for it, as PostgreSQL\n" +
					"has it (pg_get_functiondef), for a DBA to review. An unknown change prints \"null\" with\n" +
					"--json (and a line saying so without it), with exit 0.\n\n" +
					"Example:\n  chunks --schema lab change show hold_payment",
				Action: action(parseChangeName, runChangeShow),
			},
			{
				Name:      "drop",
				Usage:     "drop a declared change and its generated function",
				UsageText: "chunks change drop [--dsn DSN] [--schema S] [--json] NAME",
				Description: "Refused (exit 3) while any job of the change exists. An unknown change is said so, with\n" +
					"exit 0: nothing to drop. Only the owner of the chunks schema may drop a change. --json\n" +
					"prints {\"name\", \"dropped\"}.\n\n" +
					"Example:\n  chunks --schema lab change drop hold_payment",
				Action: action(parseChangeName, runChangeDrop),
			},
			{
				Name:      "retire",
				Usage:     "retire a change whose jobs have all ended: its functions go, its definition stays for their reports",
				UsageText: "chunks change retire [--dsn DSN] [--schema S] [--json] NAME",
				Description: "Every job of the change must have ended (finished, abandoned or archived; exit 3 otherwise).\n" +
					"Its generated functions are dropped; its definition and digest are kept, so chunks report,\n" +
					"inspect and verify still answer for its jobs by the definition they were approved under (they\n" +
					"never run again, and have no undo: undo before retiring). A new definition under the name\n" +
					"(chunks change define) is then a new version; the same definition again is this one, live\n" +
					"again. Only the owner of the chunks schema may retire a change. --json prints {\"name\",\n" +
					"\"digest\", \"jobs\"}.\n\n" +
					"Example:\n  chunks --schema lab change retire hold_payment",
				Action: action(parseChangeName, runChangeRetire),
			},
		},
	}
}

// changeParam is the NAME argument of chunks change show and drop.
var changeParam = param{name: "NAME", what: "the change's name"}

// changeDefineOptions is chunks change define FILE.
type changeDefineOptions struct {
	Definition driver.ChangeDefinition // FILE, read strictly (driver.ParseChange)
}

// parseChangeDefine reads the FILE argument (- is stdin) as a definition.
func parseChangeDefine(c *cli.Context) (*changeDefineOptions, error) {
	path, err := fileArg(c, "FILE")
	if err != nil {
		return nil, err
	}
	data, err := readInput(path, c.App.Reader)
	if err != nil {
		return nil, err
	}
	def, err := driver.ParseChange(bytes.NewReader(data))
	return &changeDefineOptions{Definition: def}, err
}

// Validate checks the change's name; the server checks the rest against
// the catalog.
func (o *changeDefineOptions) Validate() error { return driver.CheckChangeName(o.Definition.Name) }

// runChangeDefine defines the change, saying whether it was new.
func runChangeDefine(ctx context.Context, d deps, o *changeDefineOptions, out io.Writer) error {
	def := o.Definition
	var created bool
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		created, err = driver.DefineChange(ctx, conn, def)
		return err
	})
	if err != nil {
		return ownerOnly(err, "define")
	}
	switch {
	case d.json:
		return printJSON(out, map[string]any{"name": def.Name, "created": created})
	case created:
		say(out, "defined change %s on %s (its function: apply_%[1]s; chunks change show %[1]s prints it)", def.Name, terminalSafe(def.Table))
	default:
		say(out, "change %s was already defined with this definition; nothing changed", def.Name)
	}
	return nil
}

// runChangeList prints the declared changes.
func runChangeList(ctx context.Context, d deps, _ *noArgs, out io.Writer) error {
	var list []driver.ChangeSummary
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		list, err = driver.Changes(ctx, conn)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		if list == nil {
			list = []driver.ChangeSummary{}
		}
		return printJSON(out, list)
	}
	if len(list) == 0 {
		say(out, "no change is defined (chunks change define FILE declares one)")
		return nil
	}
	t := newTable(out, "change", "table", "jobs", "digest", "defined by", "defined at")
	for _, c := range list {
		t.AppendRow([]any{c.Name, terminalSafe(c.Table), c.Jobs, c.Digest[:min(12, len(c.Digest))], terminalSafe(c.DefinedBy), c.DefinedAt.UTC().Format("2006-01-02 15:04:05Z")})
	}
	t.Render()
	return nil
}

// changeNameOptions is chunks change show NAME and chunks change drop NAME.
type changeNameOptions struct {
	Name string
}

func parseChangeName(c *cli.Context) (*changeNameOptions, error) {
	name, err := oneArg(c, changeParam)
	return &changeNameOptions{Name: name}, err
}

// Validate checks the change's name.
func (o *changeNameOptions) Validate() error { return driver.CheckChangeName(o.Name) }

// runChangeShow prints the change for review: definition, digest, jobs and
// the generated SQL.
func runChangeShow(ctx context.Context, d deps, o *changeNameOptions, out io.Writer) error {
	var info *driver.ChangeInfo
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		info, err = driver.ShowChange(ctx, conn, o.Name)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, info)
	}
	if info == nil {
		say(out, "no change %s is defined", o.Name)
		return nil
	}
	def, err := json.MarshalIndent(info.Definition, "", "  ")
	if err != nil {
		return err
	}
	say(out, "change %s on %s: %s, defined by %s at %s", info.Name, terminalSafe(info.Definition.Table),
		plural(int(info.Jobs), "job"), terminalSafe(info.DefinedBy), info.DefinedAt.UTC().Format("2006-01-02 15:04:05Z"))
	say(out, "digest %s", info.Digest)
	say(out, "\ndefinition:\n%s", safeText(string(def)))
	if info.Source == nil {
		say(out, "\nits function %s is gone: run chunks migrate, or define the change again", info.Function)
		return nil
	}
	say(out, "\ngenerated SQL (%s, SECURITY DEFINER, owned by the schema's owner):\n%s", info.Function, safeText(*info.Source))
	return nil
}

// runChangeDrop drops the change, saying whether it was there.
func runChangeDrop(ctx context.Context, d deps, o *changeNameOptions, out io.Writer) error {
	var dropped bool
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		dropped, err = driver.DropChange(ctx, conn, o.Name)
		return err
	})
	if err != nil {
		return ownerOnly(err, "drop")
	}
	switch {
	case d.json:
		return printJSON(out, map[string]any{"name": o.Name, "dropped": dropped})
	case dropped:
		say(out, "dropped change %s and its function", o.Name)
	default:
		say(out, "no change %s is defined; nothing changed", o.Name)
	}
	return nil
}

// runChangeRetire retires the change.
func runChangeRetire(ctx context.Context, d deps, o *changeNameOptions, out io.Writer) error {
	var r driver.ChangeRetired
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		r, err = driver.RetireChange(ctx, conn, o.Name)
		return err
	})
	if err != nil {
		return ownerOnly(err, "retire")
	}
	if d.json {
		return printJSON(out, r)
	}
	say(out, "retired change %s (digest %s): its functions are dropped; report still answers for its %s", r.Name, r.Digest, plural(r.Jobs, "job"))
	return nil
}

// ownerOnly is err of chunks change define, drop or retire (action), where a role
// with no chunks access at all (a driver.AccessError, which names the
// grant it lacks) is told what an operator or a viewer is told: only the
// schema's owner may, and no grant helps.
func ownerOnly(err error, action string) error {
	var access *driver.AccessError
	if !errors.As(err, &access) {
		return err
	}
	return &driver.OwnerError{Action: action, Role: access.Role, Schema: access.Schema, Owner: access.Owner, Err: err}
}

// safeText is text of many lines from the database (a function's source)
// made safe for a terminal line by line, keeping its newlines and tabs.
func safeText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = terminalSafe(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}
