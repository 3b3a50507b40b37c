package router

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// param is one keyword and its value in a libpq connection string.
type param struct{ key, value string }

// conninfo is a libpq connection string as keyword/value pairs, in the
// order written. A partition of a PL/Proxy cluster must be written this way:
// PL/Proxy appends the user mapping's user and password to it as
// "user=... password=...", which a URL cannot take.
type conninfo []param

// errHidden ends every parse error: the string itself is never shown.
const errHidden = " (the connection string is not shown: it may hold a password)"

// parseConninfo reads a connection string in either of libpq's forms, a
// URL (postgres://user:password@host:port,host2/dbname?key=value) or
// keyword/value pairs (host=h port=5432 password='it\'s'), into pairs.
func parseConninfo(s string) (conninfo, error) {
	if rest, ok := strings.CutPrefix(s, "postgresql://"); ok {
		return parseURL(rest)
	}
	if rest, ok := strings.CutPrefix(s, "postgres://"); ok {
		return parseURL(rest)
	}
	return parseKeywords(s)
}

// parseURL reads what follows a URL's scheme, as libpq does: percent-decoded
// user, password and database, a comma-separated list of hosts, each with
// an optional port, and query parameters that are keywords.
func parseURL(rest string) (conninfo, error) {
	var c conninfo
	rest, query, _ := strings.Cut(rest, "?")
	netloc, dbname, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(netloc, "@"); at >= 0 {
		user, password, hasPassword := strings.Cut(netloc[:at], ":")
		netloc = netloc[at+1:]
		if err := c.addDecoded("user", user); err != nil {
			return nil, err
		}
		if hasPassword {
			if err := c.addDecoded("password", password); err != nil {
				return nil, err
			}
		}
	}
	if netloc != "" {
		var hosts, ports []string
		hasPort := false
		for _, hp := range strings.Split(netloc, ",") {
			host, port := hp, ""
			if strings.HasPrefix(hp, "[") { // [IPv6]:port
				end := strings.Index(hp, "]")
				if end < 0 {
					return nil, errors.New("cannot parse it as a URL: an IPv6 host has no closing ]" + errHidden)
				}
				host, port = hp[1:end], strings.TrimPrefix(hp[end+1:], ":")
			} else if i := strings.LastIndex(hp, ":"); i >= 0 {
				host, port = hp[:i], hp[i+1:]
			}
			h, err := url.PathUnescape(host)
			if err != nil {
				return nil, errors.New("cannot parse it as a URL: a host is not percent-encoded correctly" + errHidden)
			}
			hosts, ports = append(hosts, h), append(ports, port)
			hasPort = hasPort || port != ""
		}
		c = append(c, param{"host", strings.Join(hosts, ",")})
		if hasPort {
			c = append(c, param{"port", strings.Join(ports, ",")})
		}
	}
	if dbname != "" {
		if err := c.addDecoded("dbname", dbname); err != nil {
			return nil, err
		}
	}
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			key, value, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				return nil, errors.New("cannot parse it as a URL: a query parameter is not key=value" + errHidden)
			}
			k, err := url.PathUnescape(key)
			if err != nil {
				return nil, errors.New("cannot parse it as a URL: a query parameter is not percent-encoded correctly" + errHidden)
			}
			if err := c.addDecoded(k, value); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

func (c *conninfo) addDecoded(key, encoded string) error {
	v, err := url.PathUnescape(encoded)
	if err != nil {
		return fmt.Errorf("cannot parse it as a URL: its %s is not percent-encoded correctly%s", key, errHidden)
	}
	*c = append(*c, param{key, v})
	return nil
}

// parseKeywords reads keyword = value pairs separated by white space; a
// value is a word, or single-quoted; a backslash escapes the next
// character in either.
func parseKeywords(s string) (conninfo, error) {
	var c conninfo
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for skip(); i < len(s); skip() {
		start := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i >= len(s) || s[i] != '=' {
			return nil, errors.New("cannot parse it: every keyword needs = and a value" + errHidden)
		}
		i++
		skip()
		var v strings.Builder
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
		}
		closed := !quoted
		for i < len(s) {
			ch := s[i]
			if quoted && ch == '\'' {
				closed = true
				i++
				break
			}
			if !quoted && isSpace(ch) {
				break
			}
			if ch == '\\' && i+1 < len(s) {
				i++
				ch = s[i]
			}
			v.WriteByte(ch)
			i++
		}
		if !closed {
			return nil, errors.New("cannot parse it: a quoted value has no closing quote" + errHidden)
		}
		c = append(c, param{key, v.String()})
	}
	return c, nil
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// get is the value of key (the last one written, as libpq reads it).
func (c conninfo) get(key string) (string, bool) {
	for i := len(c) - 1; i >= 0; i-- {
		if c[i].key == key {
			return c[i].value, true
		}
	}
	return "", false
}

// without is c without any pair of the keys.
func (c conninfo) without(keys ...string) conninfo {
	var out conninfo
	for _, p := range c {
		if !slices.Contains(keys, p.key) {
			out = append(out, p)
		}
	}
	return out
}

// compact keeps only the last pair of each key (the one libpq reads), in
// the place it was written: "host=a dbname=x dbname=y" is "host=a dbname=y".
func (c conninfo) compact() conninfo {
	var out conninfo
	for i, p := range c {
		if !slices.ContainsFunc(c[i+1:], func(q param) bool { return q.key == p.key }) {
			out = append(out, p)
		}
	}
	return out
}

// with is c with key set to value, at the end, in place of any pair of key.
func (c conninfo) with(key, value string) conninfo {
	return append(c.without(key), param{key, value})
}

// secretKeys are libpq's keywords whose values are secrets. Only password
// has a safe place in a router: the user mapping (PL/Proxy's takes only
// user and password). The files that sslkey, sslcert and sslrootcert name
// are on the router's server; their paths are not secrets.
var secretKeys = []string{"password", "sslpassword", "oauth_client_secret"}

// serverFiles are libpq's keywords that name files: in a shard's
// connection string, files of the router's server, which reads them, not of
// the process that runs the install (pgx reads them when it parses a
// string, so they are left out of the check that it can).
var serverFiles = []string{"sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir", "passfile", "service", "servicefile"}

// isSecret says whether key is one of [secretKeys], in any case (libpq's
// keywords are lower case; another case is refused by libpq, but must not
// be shown either).
func isSecret(key string) bool {
	return slices.ContainsFunc(secretKeys, func(k string) bool { return strings.EqualFold(k, key) })
}

// masked is c with the value of every secret keyword replaced, for output.
func (c conninfo) masked() conninfo {
	out := make(conninfo, len(c))
	for i, p := range c {
		if isSecret(p.key) {
			p.value = "(not shown)"
		}
		out[i] = p
	}
	return out
}

// String writes the pairs as keyword='value', quoting every value.
func (c conninfo) String() string {
	parts := make([]string, len(c))
	for i, p := range c {
		parts[i] = p.key + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(p.value) + "'"
	}
	return strings.Join(parts, " ")
}
