package router

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chunks-dev/chunks/driver"
)

// Shard is one shard of a router: its partition name (p0, p1, ...) and the
// connection string the router's server uses for it (without the
// password, which is in the user mapping).
type Shard struct {
	Name     string `json:"shard"`
	Conninfo string `json:"conninfo"`
}

// Shards lists the router's shards in partition order (SQL shards()). It
// reads the router's catalog only. A secret in a connection string
// (password, sslpassword, written there by hand, since Install never
// does) is shown as (not shown), and a string that cannot be parsed is not
// shown at all.
func Shards(ctx context.Context, db driver.DB) ([]Shard, error) {
	out := []Shard{}
	if err := value(ctx, db, &out, "shards", "select shards()::text"); err != nil {
		return nil, err
	}
	for i, s := range out {
		c, err := parseConninfo(s.Conninfo)
		if err != nil {
			out[i].Conninfo = "(not shown: it cannot be parsed, and may hold a password)"
			continue
		}
		out[i].Conninfo = c.masked().String()
	}
	return out, nil
}

// ShardOf names the shard of tenant (SQL shard_of): partition hashtext(tenant)
// & (N - 1) of the N shards, where every order, job, audit and queue row of
// the tenant lives.
func ShardOf(ctx context.Context, db driver.DB, tenant string) (string, error) {
	if err := driver.CheckTenant(tenant); err != nil {
		return "", err
	}
	var shard string
	if err := db.QueryRow(ctx, "select shard_of($1)", tenant).Scan(&shard); err != nil {
		return "", driver.MapError(err)
	}
	return shard, nil
}

// value runs sql, which returns one jsonb value as text, and decodes it
// into out (a JSON null leaves a pointer nil).
func value(ctx context.Context, db driver.DB, out any, what, sql string, args ...any) error {
	var body []byte
	if err := db.QueryRow(ctx, sql, args...).Scan(&body); err != nil {
		return driver.MapError(err)
	}
	if body == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
