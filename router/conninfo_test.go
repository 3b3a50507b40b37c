package router

import (
	"strings"
	"testing"
)

// A URL becomes the keyword/value pairs libpq reads from it, and a string
// of pairs reads back to the same pairs.
func TestParseConninfo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://me:p%40ss@db.example:6432/shop?sslmode=require&application_name=a%20b",
			`user='me' password='p@ss' host='db.example' port='6432' dbname='shop' sslmode='require' application_name='a b'`},
		{"postgresql://h1:5433,h2,[::1]:5435/shop?target_session_attrs=read-write",
			`host='h1,h2,::1' port='5433,,5435' dbname='shop' target_session_attrs='read-write'`},
		{"postgres:///shop", `dbname='shop'`},
		{"postgres://h", `host='h'`},
		{`host=127.0.0.1 port = 5432 password='it\'s a \\ pass' options='-c search_path=lab'`,
			`host='127.0.0.1' port='5432' password='it\'s a \\ pass' options='-c search_path=lab'`},
		{`dbname=a\ b user=x`, `dbname='a b' user='x'`},
		{"", ""},
	} {
		c, err := parseConninfo(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := c.String(); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.in, got, tc.want)
		}
		again, err := parseConninfo(c.String())
		if err != nil || again.String() != tc.want {
			t.Errorf("%q: reading %s back gives %s, %v", tc.in, c, again, err)
		}
	}
}

// What cannot be read is refused, and the error never shows the string.
func TestParseConninfoRefuses(t *testing.T) {
	for _, in := range []string{
		"host=h password='secret",
		"host=h secret",
		"postgres://u:secret@[::1/db",
		"postgres://u:%zzsecret@h/db",
		"postgres://h/db?secret",
	} {
		_, err := parseConninfo(in)
		if err == nil {
			t.Errorf("%q: accepted", in)
			continue
		}
		if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "not shown") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// The last pair of a key wins, as in libpq, and with replaces a key's pairs.
func TestConninfoCompactWith(t *testing.T) {
	c, err := parseConninfo("host=a dbname=x port=1 dbname=y")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.compact().String(), `host='a' port='1' dbname='y'`; got != want {
		t.Errorf("compact: got %s, want %s", got, want)
	}
	if got, want := c.with("dbname", "z").without("port").String(), `host='a' dbname='z'`; got != want {
		t.Errorf("with, without: got %s, want %s", got, want)
	}
	if v, ok := c.get("dbname"); !ok || v != "y" {
		t.Errorf("get dbname: %q, %v", v, ok)
	}
}

// A secret keyword's value, in any case, is masked for output; the paths
// of a client certificate are not secrets.
func TestConninfoMasked(t *testing.T) {
	c, err := parseConninfo("host=a password=p1 sslpassword='p 2' SSLPassword=p3 oauth_client_secret=p4 sslkey=/k")
	if err != nil {
		t.Fatal(err)
	}
	want := `host='a' password='(not shown)' sslpassword='(not shown)' SSLPassword='(not shown)' oauth_client_secret='(not shown)' sslkey='/k'`
	if got := c.masked().String(); got != want {
		t.Errorf("masked:\n got %s\nwant %s", got, want)
	}
}
