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
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Campaign limits: how much input a campaign reads, and how many targets it
// may approve. The SQL function campaign_create holds the same target bound.
const (
	MaxCampaignInput   = 128 << 20 // bytes of a campaign file
	MaxCampaignTargets = 1_000_000
	MaxCampaignNameLen = MaxNameLen - 7 // job ids add -NNNNNN
	DefaultQueueWindow = 16             // a campaign's jobs in the fleet's queue at once
	maxCampaignLine    = 4096           // bytes of one JSON Lines entry
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

// CampaignStatus is campaign_status: the campaign summed over its jobs.
type CampaignStatus struct {
	Name        string   `json:"name"`
	Tenant      string   `json:"tenant"`
	ChunkSize   int      `json:"chunk_size"`
	Digest      string   `json:"digest"`
	CreatedAt   string   `json:"created_at"`
	Paused      bool     `json:"paused"`
	QueueWindow int      `json:"queue_window"`
	Targets     int      `json:"targets"`
	Committed   int      `json:"committed"`
	Remaining   int      `json:"remaining"`
	Jobs        int      `json:"jobs"`
	JobsDone    int      `json:"jobs_done"`
	JobsRunning int      `json:"jobs_running"`
	JobsPaused  int      `json:"jobs_paused"`
	JobsQueued  int      `json:"jobs_queued"`
	JobsWaiting int      `json:"jobs_waiting"` // not yet released into the queue
	Drift       int      `json:"drift"`
	RatePerS    float64  `json:"rate_per_s"` // committed targets per second since created_at
	ETAS        *float64 `json:"eta_s"`      // nil before the first commit
}

// CampaignReport is campaign_report: report() over every job of a campaign.
type CampaignReport struct {
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
		return 0, invalidf("%v", errTooLarge)
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	if b.n < 0 {
		return 0, invalidf("%v", errTooLarge)
	}
	return k, err
}

// ReadCampaignTargets reads a campaign's approval: a JSON array of targets
// or JSON Lines (one target per line; empty lines are skipped), each target
// under a job's strict rules ({"id", "revision", "qty"}, exactly those keys,
// integers in range). At most [MaxCampaignInput] bytes and
// [MaxCampaignTargets] targets; it decodes as it reads, so memory follows
// the targets, not the text. A bad entry, a duplicate id (naming both
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

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return 0, invalidf("targets: the approval is empty")
		}
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return b, br.UnreadByte()
		}
	}
}

func readArray(br *bufio.Reader) (CampaignTargets, error) {
	dec := json.NewDecoder(br)
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // '['
		return CampaignTargets{}, tooLargeOr(err, invalidf("targets: invalid JSON: %v", err))
	}
	root := &jsonPath{key: "targets"}
	var items []Target
	for dec.More() {
		if len(items) == MaxCampaignTargets {
			return CampaignTargets{}, invalidf("targets: more than %d", MaxCampaignTargets)
		}
		path := &jsonPath{parent: root, index: len(items), isIndex: true}
		v, err := decodeValue(dec, path, 1, nil)
		if err != nil {
			return CampaignTargets{}, tooLargeOr(err, err)
		}
		t, err := targetFrom(path.String(), v)
		if err != nil {
			return CampaignTargets{}, err
		}
		items = append(items, t)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return CampaignTargets{}, tooLargeOr(err, invalidf("targets: invalid JSON: %v", err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return CampaignTargets{}, tooLargeOr(err, invalidf("targets: must be a single JSON array, found more after it"))
	}
	return CampaignTargets{Targets: items, where: func(i int) string { return fmt.Sprintf("targets[%d]", i) }}, nil
}

func readLines(br *bufio.Reader) (CampaignTargets, error) {
	var items []Target
	var lines []int32 // the line of each target
	for line := 1; ; line++ {
		text, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(text) > maxCampaignLine {
			return CampaignTargets{}, invalidf("line %d: longer than %d bytes", line, maxCampaignLine)
		}
		if err != nil && err != io.EOF {
			return CampaignTargets{}, err
		}
		if trimmed := bytes.TrimSpace(text); len(trimmed) > 0 {
			if len(items) == MaxCampaignTargets {
				return CampaignTargets{}, invalidf("line %d: more than %d targets", line, MaxCampaignTargets)
			}
			where := fmt.Sprintf("line %d", line)
			if !utf8.Valid(trimmed) {
				return CampaignTargets{}, invalidf("%s: is not valid UTF-8", where)
			}
			v, derr := decodeStrict(where, trimmed, nil)
			if derr != nil {
				return CampaignTargets{}, derr
			}
			t, terr := targetFrom(where, v)
			if terr != nil {
				return CampaignTargets{}, terr
			}
			items = append(items, t)
			lines = append(lines, int32(line))
		}
		if err == io.EOF {
			break
		}
	}
	return CampaignTargets{Targets: items, where: func(i int) string { return fmt.Sprintf("line %d", lines[i]) }}, nil
}

// tooLargeOr is the bound's refusal when err came from it, else other.
func tooLargeOr(err, other error) error {
	var e *Error
	if errors.As(err, &e) && e.Msg == errTooLarge.Error() {
		return e
	}
	return other
}

// check refuses an empty approval or a duplicate id, naming both places.
func (ct CampaignTargets) check() error {
	if len(ct.Targets) == 0 {
		return invalidf("targets: the approval is empty")
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
		return invalidf("%s: duplicate id %d (first at %s)", ct.where(int(dupSecond)), ct.Targets[dupSecond].ID, ct.where(int(dupFirst)))
	}
	return nil
}

func (s CampaignSpec) check() (CampaignSpec, error) {
	if err := checkName("name", s.Name); err != nil {
		return s, err
	}
	if len(s.Name) > MaxCampaignNameLen {
		return s, invalidf("name: must be at most %d characters (job ids add -NNNNNN), got %d", MaxCampaignNameLen, len(s.Name))
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
		return s, invalidf("queue_window: must be between 1 and 10000, got %d", s.QueueWindow)
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
		return CampaignCreated{}, invalidf("targets: more than %d", MaxCampaignTargets)
	}
	for i, t := range ct.Targets {
		for j, v := range []int64{t.ID, t.Revision, t.Qty} {
			if f := targetFields[j]; v < f.min || v > f.max {
				return CampaignCreated{}, invalidf("%s.%s: must be between %d and %d, got %d", ct.where(i), f.name, f.min, f.max, v)
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
	if _, err := queryJSON(ctx, tx, &out, "campaign_create", spec.Name, spec.Tenant, spec.ChunkSize, ids, revs, qtys, spec.QueueWindow); err != nil {
		return CampaignCreated{}, rollbackTx(ctx, tx, err)
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
	defer func() {
		if rbErr := tx.Rollback(ctx); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) && err == nil {
			err = rbErr
		}
	}()
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
		return CampaignTargets{}, invalidf("query: must return exactly the columns id, revision, qty, got %v", names)
	}
	var items []Target
	for rows.Next() {
		if len(items) == MaxCampaignTargets {
			return CampaignTargets{}, invalidf("query: more than %d rows", MaxCampaignTargets)
		}
		var id, rev, qty *int64
		if err := rows.Scan(&id, &rev, &qty); err != nil {
			return CampaignTargets{}, invalidf("row %d: %v", len(items)+1, err)
		}
		for j, v := range []*int64{id, rev, qty} {
			if v == nil {
				return CampaignTargets{}, invalidf("row %d.%s: must be an integer, got null", len(items)+1, targetFields[j].name)
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

// GetCampaignStatus is campaign_status: one query over the campaign's own
// jobs. An unknown campaign is an [ErrConflict].
func GetCampaignStatus(ctx context.Context, db DB, name string) (CampaignStatus, error) {
	var s CampaignStatus
	if err := checkName("name", name); err != nil {
		return s, err
	}
	_, err := queryJSON(ctx, db, &s, "campaign_status", name)
	return s, err
}

// GetCampaignReport is campaign_report: report() over every job of the
// campaign in one query. An unknown campaign is an [ErrConflict].
func GetCampaignReport(ctx context.Context, db DB, name string) (CampaignReport, error) {
	var r CampaignReport
	if err := checkName("name", name); err != nil {
		return r, err
	}
	_, err := queryJSON(ctx, db, &r, "campaign_report", name)
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
	_, err := queryJSON(ctx, db, &c, fn, name)
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
	_, err := queryJSON(ctx, db, &c, "campaign_check", name, maxListed)
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
	_, err := queryJSON(ctx, db, &u, "campaign_undo", name, undo)
	return u, err
}
