package driver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/dbutil"
)

// Campaign limits: how much input a campaign reads, and how many targets it
// may approve. The SQL function campaign_create holds the same target bound.
const (
	MaxCampaignInput   = 128 << 20 // bytes of a campaign file
	MaxCampaignTargets = 1_000_000
	MaxCampaignNameLen = MaxNameLen - 7 // job ids add -NNNNNN
	DefaultQueueWindow = 16             // a campaign's jobs in the fleet's queue at once
	maxCampaignLine    = 4096           // bytes of one entry: a JSON Lines line, an element of the array
)

// CampaignSpec is what a campaign is, besides its targets.
type CampaignSpec struct {
	Name        string // 1 to 57 of [A-Za-z0-9_-]; its jobs are Name-000001, ...
	Tenant      string
	ChunkSize   int
	QueueWindow int // jobs of it queued at once (fairness); 0 means DefaultQueueWindow
}

// CampaignTargets is an approval read from a file or a query: the targets
// in input order and, for each, where it came from ("line 3",
// "targets[2]", "row 5"), for error messages.
type CampaignTargets struct {
	Targets []Target
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
	Name          string    `json:"name"`
	Tenant        string    `json:"tenant"`
	ChunkSize     int       `json:"chunk_size"`
	Digest        string    `json:"digest"`
	CreatedAt     time.Time `json:"created_at"`
	Paused        bool      `json:"paused"`
	QueueWindow   int       `json:"queue_window"`
	Targets       int       `json:"targets"`
	Committed     int       `json:"committed"`
	Remaining     int       `json:"remaining"`
	Jobs          int       `json:"jobs"`
	JobsDone      int       `json:"jobs_done"`
	JobsRunning   int       `json:"jobs_running"`
	JobsPaused    int       `json:"jobs_paused"`
	JobsQueued    int       `json:"jobs_queued"`
	JobsWaiting   int       `json:"jobs_waiting"` // not yet released into the queue
	Drift         int       `json:"drift"`
	RatePerSecond float64   `json:"rate_per_s"` // committed targets per second since created_at
	ETASeconds    *float64  `json:"eta_s"`      // nil before the first commit
}

// CampaignDrift is campaign_report: report() over every job of a campaign.
type CampaignDrift struct {
	Name         string  `json:"name"`
	Targets      int     `json:"targets"`
	Committed    int     `json:"committed"`
	Remaining    int     `json:"remaining"`
	Matching     int     `json:"matching"`
	DriftedCount int     `json:"drifted_count"`
	MissingCount int     `json:"missing_count"`
	Drifted      []int64 `json:"drifted"`
	Missing      []int64 `json:"missing"`
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
	br := bufio.NewReaderSize(&boundedReader{r: r, n: MaxCampaignInput}, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		return CampaignTargets{}, err
	}
	var ct CampaignTargets
	if first == '[' {
		ct, err = readArray(br)
	} else {
		ct, err = readLines(br)
	}
	if err != nil {
		return CampaignTargets{}, err
	}
	return ct, ct.check()
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
func readArray(br *bufio.Reader) (CampaignTargets, error) {
	if _, err := br.ReadByte(); err != nil { // '[', as firstByte saw
		return CampaignTargets{}, err
	}
	var items []Target
	entry := make([]byte, 0, maxCampaignLine)
	depth, inString, escaped := 0, false, false
	for {
		if len(entry) == 0 { // between entries: the whitespace is streamed, not held
			if _, err := skipSpace(br); err != nil && err != io.EOF {
				return CampaignTargets{}, err
			}
		}
		b, err := br.ReadByte()
		if err == io.EOF {
			return CampaignTargets{}, Invalidf("targets: invalid JSON: unexpected end of input")
		}
		if err != nil {
			return CampaignTargets{}, err
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
			if b == ']' && len(items) == 0 && len(entry) == 0 {
				return arrayEnd(br, items) // []: refused as empty by check
			}
			if items, err = appendTarget(items, fmt.Sprintf("targets[%d]", len(items)), entry); err != nil {
				return CampaignTargets{}, err
			}
			entry = entry[:0]
			if b == ']' {
				return arrayEnd(br, items)
			}
			continue
		}
		if len(entry) == maxCampaignLine {
			return CampaignTargets{}, Invalidf("targets[%d]: longer than %d bytes", len(items), maxCampaignLine)
		}
		entry = append(entry, b)
	}
}

// arrayEnd reads what follows the array's closing bracket: whitespace only.
func arrayEnd(br *bufio.Reader, items []Target) (CampaignTargets, error) {
	switch _, err := skipSpace(br); err {
	case io.EOF:
		return CampaignTargets{Targets: items, where: func(i int) string { return fmt.Sprintf("targets[%d]", i) }}, nil
	case nil:
		return CampaignTargets{}, Invalidf("targets: must be a single JSON array, found more after it")
	default:
		return CampaignTargets{}, err
	}
}

func readLines(br *bufio.Reader) (CampaignTargets, error) {
	var items []Target
	var lines []int32 // the line of each target
	for line := 1; ; line++ {
		text, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(text) > maxCampaignLine {
			return CampaignTargets{}, Invalidf("line %d: longer than %d bytes", line, maxCampaignLine)
		}
		if err != nil && err != io.EOF {
			return CampaignTargets{}, err
		}
		if len(bytes.TrimSpace(text)) > 0 {
			var aerr error
			if items, aerr = appendTarget(items, fmt.Sprintf("line %d", line), text); aerr != nil {
				return CampaignTargets{}, aerr
			}
			lines = append(lines, int32(line))
		}
		if err == io.EOF {
			break
		}
	}
	return CampaignTargets{Targets: items, where: func(i int) string { return fmt.Sprintf("line %d", lines[i]) }}, nil
}

// appendTarget decodes one entry of a campaign file (where names it) under
// a job's strict rules and appends it, refusing more than
// [MaxCampaignTargets].
func appendTarget(items []Target, where string, text []byte) ([]Target, error) {
	if len(items) == MaxCampaignTargets {
		return nil, Invalidf("%s: more than %d targets", where, MaxCampaignTargets)
	}
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return nil, Invalidf("%s: invalid JSON: a missing value", where)
	}
	v, err := decodeStrict(where, text, nil)
	if err != nil {
		return nil, err
	}
	t, err := targetFrom(where, v)
	if err != nil {
		return nil, err
	}
	return append(items, t), nil
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
	if err := checkName("tenant", s.Tenant); err != nil {
		return s, err
	}
	if err := checkChunkSize(int64(s.ChunkSize)); err != nil {
		return s, err
	}
	if s.QueueWindow == 0 {
		s.QueueWindow = DefaultQueueWindow
	}
	if s.QueueWindow < 1 || s.QueueWindow > 10000 {
		return s, Invalidf("queue_window: must be between 1 and 10000, got %d", s.QueueWindow)
	}
	return s, nil
}

// CreateCampaign records a campaign in one statement of one transaction: the targets go to the server as three arrays, and
// campaign_create splits them, sorted by id, into jobs of at most 64
// targets, records the campaign, queues its first jobs and notifies the
// fleet once. Re-creating the same approval changes nothing (Created
// false); a different one under the name is an [ErrConflict] naming the
// first difference. Bad input is refused before anything is sent.
func CreateCampaign(ctx context.Context, db DB, spec CampaignSpec, ct CampaignTargets) (CampaignCreated, error) {
	spec, err := spec.check()
	if err != nil {
		return CampaignCreated{}, err
	}
	if ct.where == nil {
		ct.where = func(i int) string { return fmt.Sprintf("targets[%d]", i) }
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
	// An explicit transaction: COMMIT is sent only after the result came
	// back, so a client that dies while the statement runs leaves nothing.
	tx, err := db.Begin(ctx)
	if err != nil {
		return CampaignCreated{}, err
	}
	var out CampaignCreated
	if _, err := QueryJSON(ctx, tx, &out, "campaign_create", spec.Name, spec.Tenant, spec.ChunkSize, ids, revs, qtys, spec.QueueWindow); err != nil {
		return CampaignCreated{}, dbutil.RollbackWithoutCancel(ctx, tx, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return CampaignCreated{}, err
	}
	return out, nil
}

// CampaignTargetsFromQuery runs the operator's query, one statement (see
// [QueryOne]), in a READ ONLY transaction (REPEATABLE READ: one snapshot,
// the approval frozen at that moment) and takes its rows, which must be
// exactly the integer columns id, revision, qty, as the approval. Rows are
// named "row N" (1-based) in errors.
func CampaignTargetsFromQuery(ctx context.Context, conn *pgx.Conn, query string) (ct CampaignTargets, err error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return CampaignTargets{}, err
	}
	defer func() { err = dbutil.RollbackWithoutCancel(ctx, tx, err) }()
	rows, err := QueryOne(ctx, tx, "query", query)
	if err != nil {
		return CampaignTargets{}, MapError(err)
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	if len(fields) == 0 { // the query failed: pgx reports it when the rows are read or closed
		rows.Close()
		if err := rows.Err(); err != nil {
			return CampaignTargets{}, MapError(err)
		}
	}
	if len(fields) != 3 || fields[0].Name != "id" || fields[1].Name != "revision" || fields[2].Name != "qty" {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.Name
		}
		return CampaignTargets{}, Invalidf("query: must return exactly the columns id, revision, qty, got %v", names)
	}
	var items []Target
	for rows.Next() {
		if len(items) == MaxCampaignTargets {
			return CampaignTargets{}, Invalidf("query: more than %d rows", MaxCampaignTargets)
		}
		var id, rev, qty *int64
		if err := rows.Scan(&id, &rev, &qty); err != nil {
			return CampaignTargets{}, Invalidf("row %d: %v", len(items)+1, err)
		}
		for j, v := range []*int64{id, rev, qty} {
			if v == nil {
				return CampaignTargets{}, Invalidf("row %d.%s: must be an integer, got null", len(items)+1, targetFields[j].name)
			}
		}
		items = append(items, Target{ID: *id, Revision: *rev, Qty: *qty})
	}
	if err := rows.Err(); err != nil {
		return CampaignTargets{}, MapError(err)
	}
	rows.Close()
	if err := tx.Commit(ctx); err != nil {
		return CampaignTargets{}, err
	}
	ct = CampaignTargets{Targets: items, where: func(i int) string { return fmt.Sprintf("row %d", i+1) }}
	return ct, ct.check()
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
	var r CampaignDrift
	if err := checkName("name", name); err != nil {
		return r, err
	}
	_, err := QueryJSON(ctx, db, &r, "campaign_report", name)
	return r, err
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
		ID      int64  `json:"id"`
		Problem string `json:"problem"`
	} `json:"listed"` // the first problems, in id order
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
	Name    string  `json:"name"`
	Undoes  string  `json:"undoes"`
	Created bool    `json:"created"` // false: it already was the undo
	Jobs    int     `json:"jobs"`
	Targets int     `json:"targets"`
	Drifted []int64 `json:"drifted,omitempty"` // committed orders changed since, left alone
	Missing []int64 `json:"missing,omitempty"` // committed orders gone, left alone
}

// UndoCampaign is campaign_undo: one undo campaign (undoName; "" means
// NAME-undo) of register_undo jobs, one per job of the campaign with a
// committed order still as it left it, in one transaction. The campaign
// must be paused or finished.
func UndoCampaign(ctx context.Context, db DB, name, undoName string) (CampaignUndo, error) {
	var u CampaignUndo
	if err := checkName("name", name); err != nil {
		return u, err
	}
	var undo *string
	if undoName != "" {
		undo = &undoName
	}
	_, err := QueryJSON(ctx, db, &u, "campaign_undo", name, undo)
	return u, err
}
