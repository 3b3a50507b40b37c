package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/chunks-dev/chunks/internal/dbutil"
)

// ReadChangeCampaignTargets reads the approval of a campaign of a declared
// change ([CampaignSpec].Change): a JSON array or JSON Lines, within
// [ReadCampaignTargets]' bounds, of JSON objects, each a target of the
// change ({"payment_id": 42, "lock_version": 3, ...}). Here each entry must
// only be one JSON object (an [ErrInvalid] naming the line or index
// otherwise); the server checks its fields against the change, naming the
// same line or index.
func ReadChangeCampaignTargets(r io.Reader) (CampaignTargets, error) {
	var objects []json.RawMessage
	where, err := readEntries(r, func(where string, text []byte) (err error) {
		objects, err = appendObject(objects, where, text)
		return err
	})
	if err != nil {
		return CampaignTargets{}, err
	}
	if len(objects) == 0 {
		return CampaignTargets{}, Invalidf("targets: the approval is empty")
	}
	return CampaignTargets{Objects: objects, where: where}, nil
}

// appendObject decodes one entry of a change campaign's file (where names
// it) strictly, as one JSON object with no key twice, and appends its
// compact text, refusing more than [MaxCampaignTargets].
func appendObject(objects []json.RawMessage, where string, text []byte) ([]json.RawMessage, error) {
	v, err := decodeEntry(len(objects), where, text)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(*object); !ok {
		return nil, Invalidf("%s: must be an object with the change's fields, got %s", where, describe(v))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, bytes.TrimSpace(text)); err != nil {
		return nil, Invalidf("%s: invalid JSON: %v", where, err)
	}
	return append(objects, buf.Bytes()), nil
}

// ChangeCampaignTargetsFromQuery runs the operator's query as
// [CampaignTargetsFromQuery] does (one statement, READ ONLY, one snapshot)
// and takes each row as a target of a declared change: an object of its
// columns by name, a number for a numeric column, a boolean for a boolean
// one, null for NULL, and otherwise the value as the server prints it (a
// string). So the columns must be named as the change's target fields; the
// server checks them, naming the row ("row 5: missing field reason"). A
// column name twice is an [ErrInvalid] naming it.
func ChangeCampaignTargetsFromQuery(ctx context.Context, conn *pgx.Conn, query string) (CampaignTargets, error) {
	var objects []json.RawMessage
	err := readQuery(ctx, conn, query, func(rows pgx.Rows) error {
		fields := rows.FieldDescriptions()
		seen := make(map[string]bool, len(fields))
		names := make([][]byte, len(fields))
		for i, f := range fields {
			if seen[f.Name] {
				return Invalidf("query: column %s appears twice", Excerpt(f.Name, true))
			}
			seen[f.Name] = true
			name, err := json.Marshal(f.Name)
			if err != nil {
				return err
			}
			names[i] = name
		}
		for rows.Next() {
			if len(objects) == MaxCampaignTargets {
				return Invalidf("query: more than %d rows", MaxCampaignTargets)
			}
			objects = append(objects, rowObject(fields, names, rows.RawValues()))
		}
		return nil
	}, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		return CampaignTargets{}, err
	}
	if len(objects) == 0 {
		return CampaignTargets{}, Invalidf("targets: the approval is empty")
	}
	return CampaignTargets{Objects: objects, where: func(i int) string { return fmt.Sprintf("row %d", i+1) }}, nil
}

// rowObject is one row, its values in the text format, as a JSON object
// of its columns by name (names: their JSON text).
func rowObject(fields []pgconn.FieldDescription, names [][]byte, values [][]byte) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(names[i])
		buf.WriteByte(':')
		buf.Write(textValue(f.DataTypeOID, values[i]))
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// textValue is a column's value (text format, nil for NULL) as JSON: a
// number for an integer or numeric column when the text is one, true or
// false for a boolean, else a string.
func textValue(oid uint32, v []byte) []byte {
	switch {
	case v == nil:
		return []byte("null")
	case oid == pgtype.BoolOID:
		if string(v) == "t" {
			return []byte("true")
		}
		return []byte("false")
	case oid == pgtype.Int2OID || oid == pgtype.Int4OID || oid == pgtype.Int8OID || oid == pgtype.NumericOID ||
		oid == pgtype.Float4OID || oid == pgtype.Float8OID:
		if _, err := strconv.ParseFloat(string(v), 64); err == nil && json.Valid(v) {
			return v
		}
	}
	b, err := json.Marshal(string(v))
	if err != nil { // a string always marshals
		panic(err)
	}
	return b
}

// createChangeCampaign is [CreateCampaign] for a campaign of a declared
// change: the targets go to the server as one JSON array, with where each
// came from, and campaign_create_change checks them against the change.
func createChangeCampaign(ctx context.Context, db DB, spec CampaignSpec, ct CampaignTargets) (CampaignCreated, error) {
	if len(ct.Targets) > 0 {
		return CampaignCreated{}, Invalidf("targets: a campaign of a change takes its targets as objects (ReadChangeCampaignTargets)")
	}
	if len(ct.Objects) == 0 {
		return CampaignCreated{}, Invalidf("targets: the approval is empty")
	}
	if len(ct.Objects) > MaxCampaignTargets {
		return CampaignCreated{}, Invalidf("targets: more than %d", MaxCampaignTargets)
	}
	var body bytes.Buffer
	labels := make([]string, len(ct.Objects))
	var tenants []string
	body.WriteByte('[')
	for i, o := range ct.Objects {
		if i > 0 {
			body.WriteByte(',')
		}
		if spec.TenantFrom != "" {
			var tenant string
			var err error
			if o, tenant, err = takeTenant(o, spec.TenantFrom, ct.where(i)); err != nil {
				return CampaignCreated{}, err
			}
			tenants = append(tenants, tenant)
		}
		body.Write(o)
		labels[i] = ct.where(i)
	}
	body.WriteByte(']')
	var tenant any = spec.Tenant
	if spec.TenantFrom != "" {
		tenant = nil
	}
	return createInTx(ctx, db, "campaign_create_change", spec.Name, spec.Change, tenant, spec.ChunkSize, body.String(), labels,
		spec.QueueWindow, tenants)
}

// takeTenant takes field from the target o (where names it): the target
// without it, and its value as text (a string's, or a number as written).
func takeTenant(o json.RawMessage, field, where string) (json.RawMessage, string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(o, &fields); err != nil {
		return nil, "", Invalidf("%s: %v", where, err)
	}
	v, ok := fields[field]
	if !ok {
		return nil, "", Invalidf("%s: has no %s (tenant_from), the field its tenant comes from", where, Excerpt(field, true))
	}
	delete(fields, field)
	var tenant string
	if err := json.Unmarshal(v, &tenant); err != nil {
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, "", Invalidf("%s.%s: the tenant must be a string or a number, got %s", where, field, Excerpt(string(v), false))
		}
		tenant = n.String()
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil, "", err
	}
	return rest, tenant, nil
}

// createInTx calls fn (campaign_create or campaign_create_change) in an
// explicit transaction: COMMIT is sent only after the result came back, so
// a client that dies while the statement runs leaves nothing.
func createInTx(ctx context.Context, db DB, fn string, args ...any) (CampaignCreated, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return CampaignCreated{}, err
	}
	var out CampaignCreated
	if _, err := QueryJSON(ctx, tx, &out, fn, args...); err != nil {
		return CampaignCreated{}, dbutil.RollbackWithoutCancel(ctx, tx, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return CampaignCreated{}, err
	}
	return out, nil
}
