package web

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost":              true,
		"localhost:9187":         true,
		"LOCALHOST:9187":         true,
		"127.0.0.1":              true,
		"127.0.0.1:9187":         true,
		"127.255.0.9:1":          true,
		"[::1]":                  true,
		"[::1]:9187":             true,
		"":                       false, // HTTP/1.0 without a Host
		"evil.example":           false,
		"evil.example:9187":      false,
		"localhost.evil.example": false,
		"localhost.":             false,
		"evil-localhost:9187":    false,
		"127.0.0.1.nip.io:9187":  false,
		"127.1":                  false, // not an address Go reads; a browser sends 127.0.0.1
		"2130706433":             false,
		"0.0.0.0:9187":           false,
		"10.0.0.1:9187":          false,
		"128.0.0.1":              false,
		"[::]:9187":              false,
		"[fe80::1]:9187":         false,
		"[::1%25lo]:9187":        false,
		"[::1":                   false,
		"::1]":                   false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// Serve on loopback answers 421 to another Host on every path, and serves
// a loopback one; on another address it serves any Host.
func TestServeHostRule(t *testing.T) {
	h := (&Server{Title: "t"}).Handler() // /healthz and /static/ need no database
	for _, c := range []struct {
		addr, host string
		code       int
	}{
		{"127.0.0.1:0", "evil.example", http.StatusMisdirectedRequest},
		{"127.0.0.1:0", "evil.example:80", http.StatusMisdirectedRequest},
		{"127.0.0.1:0", "localhost:8080", http.StatusOK},
		{"127.0.0.1:0", "127.0.0.1", http.StatusOK},
		{"0.0.0.0:0", "evil.example", http.StatusOK},
		{"0.0.0.0:0", "dash.internal:9187", http.StatusOK},
	} {
		l, err := Listen(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		url := "http://127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		ctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- Serve(ctx, l, h, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
		for _, path := range []string{"/healthz", "/static/page.css", "/nope"} {
			code, body := get(t, url+path, c.host)
			want := c.code
			if want == http.StatusOK && path == "/nope" {
				want = http.StatusNotFound
			}
			if code != want || (want == http.StatusMisdirectedRequest && body != misdirected+"\n") {
				t.Errorf("%s, Host %s, GET %s: %d %q, want %d", c.addr, c.host, path, code, body, want)
			}
		}
		stop()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
}

// get sends GET url with the Host header host and reads the answer.
func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
