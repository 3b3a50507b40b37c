package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/dbutil"
)

// Campaign limits: how much input a campaign reads, and how many targets it
// may approve. The SQL function limits() holds the same target, name and
// queue-window bounds (tests/limits_test.go compares them).
const (
	MaxCampaignInput   = 128 << 20 // bytes of a campaign file
	MaxCampaignTargets = 1_000_000
	MaxCampaignNameLen = MaxNameLen - 7 // job ids add -NNNNNN
	DefaultQueueWindow = 16             // a campaign's jobs in the fleet's queue at once
	MinQueueWindow     = 1              // the smallest queue window
	MaxQueueWindow     = 10000          // the largest queue window
	maxCampaignLine    = 4096           // bytes of one entry: a JSON Lines line, an element of the array
)

// CampaignJobTargets is how many targets each job of a campaign at
// chunkSize holds (the last one may hold fewer), as the SQL function
// campaign_job_size cuts them: a whole number of chunks, at most
// [MaxTargets] for orders; for a declared change (change), at most 100
// chunks and [MaxChangeTargets].
func CampaignJobTargets(chunkSize int, change bool) int {
	if chunkSize < 1 {
		return 0
	}
	if change {
		return min(chunkSize*100, MaxChangeTargets-MaxChangeTargets%chunkSize)
	}
	return MaxTargets - MaxTargets%chunkSize
}

// CampaignSpec is what a campaign is, besides its targets.
type CampaignSpec struct {
	Name        string // 1 to 57 of [A-Za-z0-9_-]; its jobs are Name-000001, ...
	Tenant      string
	ChunkSize   int
	QueueWindow int // jobs of it queued at once (fairness); 0 means DefaultQueueWindow
	// Change is the declared change whose targets the campaign approves
	// (docs/your-own-tables.md): its targets are then [CampaignTargets].Objects.
	// "" is a campaign of orders.
	Change string
	// TenantFrom (with Change, and Tenant "") makes one campaign over many
	// tenants: each target's tenant is its field TenantFrom (a value of the
	// change's tenant column), taken out of the target; each job holds one
	// tenant's targets, and one approval and digest cover them all.
	TenantFrom string
}

// CampaignTargets is an approval read from a file or a query: the targets
// in input order and, for each, where it came from ("line 3",
// "targets[2]", "row 5"), for error messages.
type CampaignTargets struct {
	Targets []Target
	// Objects are the targets of a campaign of a declared change, each a
	// JSON object of the change's fields ([ReadChangeCampaignTargets],
	// [ChangeCampaignTargetsFromQuery]); the server checks them.
	Objects []json.RawMessage
	where   func(i int) string
}

// CampaignCreated is what [CreateCampaign] did.
type CampaignCreated struct {
	Name    string `json:"name"`
	Created bool   `json:"created"` // false: the same approval was already recorded
	Jobs    int    `json:"jobs"`
	Targets int    `json:"targets"`
	Digest  string `json:"digest"` // sha256 of tenant, chunk size and the sorted targets
}

// CampaignProgress is campaign_status: the campaign summed over its jobs.
type CampaignProgress struct {
	Name             string    `json:"name"`
	Tenant           string    `json:"tenant"`
	ChunkSize        int       `json:"chunk_size"`
	Digest           string    `json:"digest"`
	CreatedAt        time.Time `json:"created_at"`
	Paused           bool      `json:"paused"`
	QueueWindow      int       `json:"queue_window"`
	Targets          int       `json:"targets"`
	Committed        int       `json:"committed"`
	Remaining        int       `json:"remaining"`
	Jobs             int       `json:"jobs"`
	JobsDone         int       `json:"jobs_done"`
	JobsRunning      int       `json:"jobs_running"`
	JobsPaused       int       `json:"jobs_paused"`
	JobsQueued       int       `json:"jobs_queued"`
	JobsWaiting      int       `json:"jobs_waiting"`      // not yet released into the queue
	JobsAbandoned    int       `json:"jobs_abandoned"`    // ended by abandon: their remaining targets are never run
	AbandonedTargets int       `json:"abandoned_targets"` // those remaining targets
	JobsProposed     int       `json:"jobs_proposed"`     // two people: waiting for their approval ([ApproveCampaign])
	RatePerSecond    *float64  `json:"rate_per_s"`        // committed targets per second over about the last minute; nil when no fleet worker sampled it
	ETASeconds       *float64  `json:"eta_s"`             // nil when the rate is unknown or 0, or stalled
	Stalled          bool      `json:"stalled"`           // targets remain and no job is running or queued (they are paused): nothing moves until a person decides
	// Tenants is a campaign over many tenants' progress by tenant
	// ([CampaignSpec].TenantFrom; its Tenant is ""), in tenant order.
	Tenants []TenantProgress `json:"tenants,omitempty"`
	// ProposedBy, ProposedAt, ApprovedBy and ApprovedAt are a two-person
	// campaign's (docs/safety.md "Two people"): who proposed it when, and
	// who approved it when (nil while it waits); all nil for others.
	ProposedBy *string    `json:"proposed_by,omitempty"`
	ProposedAt *time.Time `json:"proposed_at,omitempty"`
	ApprovedBy *string    `json:"approved_by,omitempty"`
	ApprovedAt *time.Time `json:"approved_at,omitempty"`
}

// TenantProgress is one tenant's part of a campaign over many tenants.
type TenantProgress struct {
	Tenant    string `json:"tenant"`
	Targets   int    `json:"targets"`
	Committed int    `json:"committed"`
	Jobs      int    `json:"jobs"`
	JobsDone  int    `json:"jobs_done"`
}

// CampaignDrift is campaign_report: report() over every job of a campaign.
type CampaignDrift struct {
	Name         string `json:"name"`
	Targets      int    `json:"targets"`
	Committed    int    `json:"committed"`
	Remaining    int    `json:"remaining"`
	Matching     int    `json:"matching"`
	DriftedCount int    `json:"drifted_count"`
	MissingCount int    `json:"missing_count"`
	// Drifted and Missing are the keys of the committed rows changed since
	// and gone: order ids, or a declared change's keys of any type.
	Drifted []Key `json:"drifted"`
	Missing []Key `json:"missing"`
	// SkippedCount and Skipped are the targets operators set aside
	// ([Skip], with its job), in the jobs' order then key order: neither
	// committed nor remaining.
	SkippedCount int    `json:"skipped_count,omitempty"`
	Skipped      []Skip `json:"skipped,omitempty"`
	// Undoes names the campaign that this one is the undo of ([UndoCampaign]),
	// and UndoneBy the undo campaign of this one; nil when none, as
	// [JobLineage] says of a job.
	Undoes   *string `json:"undoes"`
	UndoneBy *string `json:"undone_by"`
}

// CampaignChange is what [PauseCampaign] or [ResumeCampaign] did.
type CampaignChange struct {
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	Jobs    int    `json:"jobs"` // queue rows paused or resumed
}

// errTooLarge is the bounded reader's refusal.
var errTooLarge = fmt.Errorf("input: larger than %d MiB", MaxCampaignInput>>20)

// boundedReader fails once more than n bytes have been read.
type boundedReader struct {
	r io.Reader
	n int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n < 0 {
		return 0, Invalidf("%v", errTooLarge)
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	if b.n < 0 {
		return 0, Invalidf("%v", errTooLarge)
	}
	return k, err
}

// ReadCampaignTargets reads a campaign's approval: a JSON array of targets
// or JSON Lines (one target per line; empty lines are skipped), each target
// under a job's strict rules ({"id", "revision", "qty"}, exactly those keys,
// integers in range). At most [MaxCampaignInput] bytes,
// [MaxCampaignTargets] targets and 4096 bytes per entry (a line, or an
// element of the array); it decodes one entry at a time as it reads and
// streams the whitespace between entries, so memory follows the targets,
// not the text. A bad entry, a duplicate id (naming both
// places) or an empty approval is an [ErrInvalid] naming the line or index.
func ReadCampaignTargets(r io.Reader) (CampaignTargets, error) {
	var items []Target
	where, err := readEntries(r, func(where string, text []byte) (err error) {
		items, err = appendTarget(items, where, text)
		return err
	})
	if err != nil {
		return CampaignTargets{}, err
	}
	ct := CampaignTargets{Targets: items, where: where}
	return ct, ct.check()
}

// readEntries reads a campaign file, a JSON array or JSON Lines, within
// the campaign's bounds, and gives each entry to add (where names it:
// "targets[2]", "line 3"). It returns the name of the i-th entry added.
func readEntries(r io.Reader, add func(where string, text []byte) error) (func(i int) string, error) {
	br := bufio.NewReaderSize(&boundedReader{r: r, n: MaxCampaignInput}, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		return nil, err
	}
	if first == '[' {
		return readArray(br, add)
	}
	return readLines(br, add)
}

// firstByte is the first byte that is not whitespace, still unread.
func firstByte(br *bufio.Reader) (byte, error) {
	b, err := skipSpace(br)
	if err == io.EOF {
		return 0, Invalidf("targets: the approval is empty")
	}
	return b, err
}

// skipSpace discards whitespace, a buffer at a time, and returns the next
// byte (still unread), or io.EOF.
func skipSpace(br *bufio.Reader) (byte, error) {
	for {
		if _, err := br.Peek(1); err != nil {
			return 0, err
		}
		buf, err := br.Peek(br.Buffered())
		if err != nil {
			return 0, err
		}
		n := 0
		for n < len(buf) && isSpace(buf[n]) {
			n++
		}
		if _, err := br.Discard(n); err != nil {
			return 0, err
		}
		if n < len(buf) {
			return buf[n], nil // Discard moved past it, and left the buffer as it was
		}
	}
}

// readArray reads a JSON array one entry at a time: it splits the text at
// the array's own commas (outside strings and nested values), skipping the
// whitespace between entries as it streams, and decodes each entry as
// JSON Lines does one line, so no more than one entry of at most
// maxCampaignLine bytes is ever held, whatever the text holds.
func readArray(br *bufio.Reader, add func(where string, text []byte) error) (func(i int) string, error) {
	if _, err := br.ReadByte(); err != nil { // '[', as firstByte saw
		return nil, err
	}
	items := 0
	entry := make([]byte, 0, maxCampaignLine)
	depth, inString, escaped := 0, false, false
	for {
		if len(entry) == 0 { // between entries: the whitespace is streamed, not held
			if _, err := skipSpace(br); err != nil && err != io.EOF {
				return nil, err
			}
		}
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil, Invalidf("targets: invalid JSON: unexpected end of input")
		}
		if err != nil {
			return nil, err
		}
		switch {
		case inString:
			inString = escaped || b != '"'
			escaped = !escaped && b == '\\'
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
		case (b == '}' || b == ']') && depth > 0:
			depth--
		case b == ']' || b == ',' && depth == 0:
			if b == ']' && items == 0 && len(entry) == 0 {
				return arrayEnd(br) // []: refused as empty by check
			}
			if err := add(fmt.Sprintf("targets[%d]", items), entry); err != nil {
				return nil, err
			}
			items++
			entry = entry[:0]
			if b == ']' {
				return arrayEnd(br)
			}
			continue
		}
		if len(entry) == maxCampaignLine {
			return nil, Invalidf("targets[%d]: longer than %d bytes", items, maxCampaignLine)
		}
		entry = append(entry, b)
	}
}

// arrayEnd reads what follows the array's closing bracket: whitespace only.
func arrayEnd(br *bufio.Reader) (func(i int) string, error) {
	switch _, err := skipSpace(br); err {
	case io.EOF:
		return func(i int) string { return fmt.Sprintf("targets[%d]", i) }, nil
	case nil:
		return nil, Invalidf("targets: must be a single JSON array, found more after it")
	default:
		return nil, err
	}
}

// readLines reads JSON Lines, giving add each line that is not empty.
func readLines(br *bufio.Reader, add func(where string, text []byte) error) (func(i int) string, error) {
	var lines []int32 // the line of each target
	for line := 1; ; line++ {
		text, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(text) > maxCampaignLine {
			return nil, Invalidf("line %d: longer than %d bytes", line, maxCampaignLine)
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(bytes.TrimSpace(text)) > 0 {
			if aerr := add(fmt.Sprintf("line %d", line), text); aerr != nil {
				return nil, aerr
			}
			lines = append(lines, int32(line))
		}
		if err == io.EOF {
			break
		}
	}
	return func(i int) string { return fmt.Sprintf("line %d", lines[i]) }, nil
}

// appendTarget decodes one entry of a campaign file (where names it) under
// a job's strict rules and appends it, refusing more than
// [MaxCampaignTargets].
func appendTarget(items []Target, where string, text []byte) ([]Target, error) {
	v, err := decodeEntry(len(items), where, text)
	if err != nil {
		return nil, err
	}
	t, err := targetFrom(where, v)
	if err != nil {
		return nil, err
	}
	return append(items, t), nil
}

// decodeEntry decodes one entry of a campaign file (where names it) of
// the n already read, strictly, refusing more than [MaxCampaignTargets].
func decodeEntry(n int, where string, text []byte) (any, error) {
	if n == MaxCampaignTargets {
		return nil, Invalidf("%s: more than %d targets", where, MaxCampaignTargets)
	}
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return nil, Invalidf("%s: invalid JSON: a missing value", where)
	}
	return decodeStrict(where, text, nil)
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// check refuses an empty approval or a duplicate id, naming both places.
func (ct CampaignTargets) check() error {
	if len(ct.Targets) == 0 {
		return Invalidf("targets: the approval is empty")
	}
	order := make([]int32, len(ct.Targets))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmpInt64(ct.Targets[a].ID, ct.Targets[b].ID); c != 0 {
			return c
		}
		return int(a - b)
	})
	var dupFirst, dupSecond int32 = -1, -1
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		if ct.Targets[a].ID == ct.Targets[b].ID && (dupSecond < 0 || b < dupSecond) {
			dupFirst, dupSecond = a, b
		}
	}
	if dupSecond >= 0 {
		return Invalidf("%s: duplicate id %d (first at %s)", ct.where(int(dupSecond)), ct.Targets[dupSecond].ID, ct.where(int(dupFirst)))
	}
	return nil
}

func (s CampaignSpec) check() (CampaignSpec, error) {
	if err := checkName("name", s.Name); err != nil {
		return s, err
	}
	if len(s.Name) > MaxCampaignNameLen {
		return s, Invalidf("name: must be at most %d characters (job ids add -NNNNNN), got %d", MaxCampaignNameLen, len(s.Name))
	}
	switch {
	case s.TenantFrom != "" && s.Change == "":
		return s, Invalidf("tenant_from: a campaign over many tenants is a declared change's (name the change)")
	case s.TenantFrom != "" && s.Tenant != "":
		return s, Invalidf("tenant: give one tenant, or the field each target's comes from (tenant_from), not both")
	case s.TenantFrom == "":
		if err := checkName("tenant", s.Tenant); err != nil {
			return s, err
		}
	}
	maxChunk := int64(MaxChunkSize)
	if s.Change != "" {
		maxChunk = MaxChangeChunkSize
	}
	if err := checkChunkSize(int64(s.ChunkSize), maxChunk); err != nil {
		return s, err
	}
	if s.Change != "" {
		if err := checkChangeName("change", s.Change); err != nil {
			return s, err
		}
	}
	if s.QueueWindow == 0 {
		s.QueueWindow = DefaultQueueWindow
	}
	if s.QueueWindow < MinQueueWindow || s.QueueWindow > MaxQueueWindow {
		return s, Invalidf("queue_window: must be between %d and %d, got %d", MinQueueWindow, MaxQueueWindow, s.QueueWindow)
	}
	return s, nil
}

// CreateCampaign records a campaign in one statement of one transaction: the targets go to the server as three arrays, and
// campaign_create splits them, sorted by id, into jobs of at most 64
// targets, records the campaign, queues its first jobs and notifies the
// fleet once. Re-creating the same approval changes nothing (Created
// false); a different one under the name is an [ErrConflict] naming the
// first difference. Bad input is refused before anything is sent.
//
// With spec.Change, the campaign's targets are ct.Objects, checked on the
// server against the change as [RegisterChange]'s are, and each job is a
// job of the change.
func CreateCampaign(ctx context.Context, db DB, spec CampaignSpec, ct CampaignTargets) (CampaignCreated, error) {
	spec, err := spec.check()
	if err != nil {
		return CampaignCreated{}, err
	}
	if ct.where == nil {
		ct.where = func(i int) string { return fmt.Sprintf("targets[%d]", i) }
	}
	if spec.Change != "" {
		return createChangeCampaign(ctx, db, spec, ct)
	}
	if len(ct.Objects) > 0 {
		return CampaignCreated{}, Invalidf("change: targets that are objects are a campaign of a declared change; name it")
	}
	if len(ct.Targets) > MaxCampaignTargets {
		return CampaignCreated{}, Invalidf("targets: more than %d", MaxCampaignTargets)
	}
	for i, t := range ct.Targets {
		for j, v := range []int64{t.ID, t.Revision, t.Qty} {
			if f := targetFields[j]; v < f.min || v > f.max {
				return CampaignCreated{}, Invalidf("%s.%s: must be between %d and %d, got %d", ct.where(i), f.name, f.min, f.max, v)
			}
		}
	}
	if err := ct.check(); err != nil {
		return CampaignCreated{}, err
	}
	ids := make([]int32, len(ct.Targets))
	revs := make([]int32, len(ct.Targets))
	qtys := make([]int32, len(ct.Targets))
	for i, t := range ct.Targets {
		ids[i], revs[i], qtys[i] = int32(t.ID), int32(t.Revision), int32(t.Qty)
	}
	return createInTx(ctx, db, "campaign_create", spec.Name, spec.Tenant, spec.ChunkSize, ids, revs, qtys, spec.QueueWindow)
}

// CampaignTargetsFromQuery runs the operator's query, one statement (see
// [QueryOne]), in a READ ONLY transaction (REPEATABLE READ: one snapshot,
// the approval frozen at that moment) and takes its rows, which must be
// exactly the integer columns id, revision, qty, as the approval. Rows are
// named "row N" (1-based) in errors.
func CampaignTargetsFromQuery(ctx context.Context, conn *pgx.Conn, query string) (CampaignTargets, error) {
	var items []Target
	err := readQuery(ctx, conn, query, func(rows pgx.Rows) error {
		fields := rows.FieldDescriptions()
		if len(fields) != 3 || fields[0].Name != "id" || fields[1].Name != "revision" || fields[2].Name != "qty" {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
			return Invalidf("query: must return exactly the columns id, revision, qty, got %s", keyList(names))
		}
		for rows.Next() {
			if len(items) == MaxCampaignTargets {
				return Invalidf("query: more than %d rows", MaxCampaignTargets)
			}
			var id, rev, qty *int64
			if err := rows.Scan(&id, &rev, &qty); err != nil {
				return Invalidf("row %d: %s", len(items)+1, excerptWords(err.Error())) // pgx's words quote the value whole
			}
			for j, v := range []*int64{id, rev, qty} {
				if v == nil {
					return Invalidf("row %d.%s: must be an integer, got null", len(items)+1, targetFields[j].name)
				}
			}
			items = append(items, Target{ID: *id, Revision: *rev, Qty: *qty})
		}
		return nil
	})
	if err != nil {
		return CampaignTargets{}, err
	}
	ct := CampaignTargets{Targets: items, where: func(i int) string { return fmt.Sprintf("row %d", i+1) }}
	return ct, ct.check()
}

// readQuery runs the operator's query, one statement (see [QueryOne], with
// opts), in a READ ONLY transaction (REPEATABLE READ: one snapshot, the
// approval frozen at that moment) and gives its rows to read.
func readQuery(ctx context.Context, conn *pgx.Conn, query string, read func(pgx.Rows) error, opts ...any) (err error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return err
	}
	defer func() { err = dbutil.RollbackWithoutCancel(ctx, tx, err) }()
	rows, err := QueryOne(ctx, tx, "query", query, opts...)
	if err != nil {
		return MapError(err)
	}
	defer rows.Close()
	if len(rows.FieldDescriptions()) == 0 { // the query failed: pgx reports it when the rows are read or closed
		rows.Close()
		if err := rows.Err(); err != nil {
			return MapError(err)
		}
	}
	if err := read(rows); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return MapError(err)
	}
	rows.Close()
	return tx.Commit(ctx)
}

// CampaignStatus is campaign_status: one query over the campaign's own
// jobs. An unknown campaign is an [ErrConflict].
func CampaignStatus(ctx context.Context, db DB, name string) (CampaignProgress, error) {
	var s CampaignProgress
	if err := checkName("name", name); err != nil {
		return s, err
	}
	_, err := QueryJSON(ctx, db, &s, "campaign_status", name)
	return s, err
}

// CampaignReport is campaign_report: report() over every job of the
// campaign in one query. An unknown campaign is an [ErrConflict].
func CampaignReport(ctx context.Context, db DB, name string) (CampaignDrift, error) {
	if err := checkName("name", name); err != nil {
		return CampaignDrift{}, err
	}
	var r CampaignDrift
	if _, err := QueryJSON(ctx, db, &r, "campaign_report", name); err != nil {
		return CampaignDrift{}, err
	}
	r.Drifted, r.Missing = nonNil(r.Drifted), nonNil(r.Missing)
	return r, nil
}

// PauseCampaign is campaign_pause: every job of the campaign paused, after
// its chunks in flight finish.
func PauseCampaign(ctx context.Context, db DB, name string) (CampaignChange, error) {
	return campaignChange(ctx, db, "campaign_pause", name)
}

// ResumeCampaign is campaign_resume: every paused job of the campaign
// queued again, the fleet notified once.
func ResumeCampaign(ctx context.Context, db DB, name string) (CampaignChange, error) {
	return campaignChange(ctx, db, "campaign_resume", name)
}

func campaignChange(ctx context.Context, db DB, fn, name string) (CampaignChange, error) {
	var c CampaignChange
	if err := checkName("name", name); err != nil {
		return c, err
	}
	_, err := QueryJSON(ctx, db, &c, fn, name)
	return c, err
}

// CampaignCheck is campaign_check: the preflight over every target of a
// campaign not yet committed.
type CampaignCheck struct {
	Name      string `json:"name"`
	Targets   int    `json:"targets"`
	Remaining int    `json:"remaining"`
	OK        int    `json:"ok"`       // remaining targets whose order can take the change now
	Problems  int    `json:"problems"` // remaining targets whose order cannot
	Listed    []struct {
		ID int64 `json:"id,omitempty"` // an order's id (a campaign of orders)
		// Key is a row's key (a campaign of a declared change), as
		// [ChangeTargetCheck].Key.
		Key     Key    `json:"key,omitzero"`
		Problem string `json:"problem"`
	} `json:"listed"` // the first problems, in id (key) order
}

// CheckCampaign is campaign_check, writing nothing: maxListed (0 to
// 100,000) bounds the problems listed by id.
func CheckCampaign(ctx context.Context, db DB, name string, maxListed int) (CampaignCheck, error) {
	var c CampaignCheck
	if err := checkName("name", name); err != nil {
		return c, err
	}
	_, err := QueryJSON(ctx, db, &c, "campaign_check", name, maxListed)
	return c, err
}

// CampaignUndo is what [UndoCampaign] did.
type CampaignUndo struct {
	Name    string `json:"name"`
	Undoes  string `json:"undoes"`
	Created bool   `json:"created"` // false: it already was the undo
	Jobs    int    `json:"jobs"`
	Targets int    `json:"targets"`
	// Change is the declared change of a campaign of a change, whose undo
	// jobs are jobs of the same change; empty for a campaign of orders.
	Change  string `json:"change,omitempty"`
	Drifted []Key  `json:"drifted,omitempty"` // committed orders (a change's keys) changed since, left alone
	Missing []Key  `json:"missing,omitempty"` // committed orders (a change's keys) gone, left alone
}

// UndoCampaign is campaign_undo: one undo campaign (undoName; "" means
// NAME-undo) of register_undo jobs, one per job of the campaign with a
// committed order (or, for a campaign of a declared change, row) still as
// it left it, in one transaction. The campaign must be paused or finished.
func UndoCampaign(ctx context.Context, db DB, name, undoName string) (CampaignUndo, error) {
	if err := checkName("name", name); err != nil {
		return CampaignUndo{}, err
	}
	var undo *string
	if undoName != "" {
		undo = &undoName
	}
	var u CampaignUndo
	if _, err := QueryJSON(ctx, db, &u, "campaign_undo", name, undo); err != nil {
		return CampaignUndo{}, err
	}
	return u, nil
}
