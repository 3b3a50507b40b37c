package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/app/web"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestServeOptions(t *testing.T) {
	if got, want := *parsed(t, parseServe, "serve", "--http", ":0", "--page-size", "5", "--refresh", "2s"),
		(serveOptions{HTTP: httpOptions{Addr: ":0", PageSize: 5, Refresh: 2 * time.Second}}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got, want := *parsed(t, parseServe, "serve"), (serveOptions{HTTP: httpOptions{PageSize: web.DefaultPageSize, Refresh: web.DefaultRefresh}}); got != want {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	ok := httpOptions{Addr: ":0", PageSize: web.DefaultPageSize, Refresh: web.DefaultRefresh}
	for _, tc := range []struct {
		edit func(o *httpOptions)
		want string
	}{
		{func(o *httpOptions) { o.Addr = "" }, "usage: serve needs --http ADDR, e.g. --http 127.0.0.1:8080"},
		{func(o *httpOptions) { o.PageSize = 0 }, "invalid: page-size: must be between 1 and"},
		{func(o *httpOptions) { o.PageSize = web.MaxPageSize + 1 }, "invalid: page-size: must be between 1 and"},
		{func(o *httpOptions) { o.Refresh = time.Millisecond }, "invalid: refresh: must be between 100ms and 1m0s, got 1ms"},
	} {
		o := serveOptions{HTTP: ok}
		tc.edit(&o.HTTP)
		wantInvalid(t, &o, tc.want)
	}
	wantExit(t, chunksIn(t, nil, "", "serve", "--http", ":0", "extra"), 2, `serve takes no arguments, got ["extra"]`)
}

// serve answers until its context ends, logging on d.stderr, and prints
// no result.
func TestServeRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 2, 1)
	d := labDeps(l)
	stderr := &clitest.Output{}
	d.stderr = stderr
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	o := &serveOptions{HTTP: httpOptions{Addr: "127.0.0.1:0", PageSize: web.DefaultPageSize, Refresh: web.DefaultRefresh}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- runServe(sctx, d, o, &out) }()
	url := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(outputHolding(t, stderr, "url="))[1]
	get := func(path string) (int, string) {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(body)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d", code)
	}
	if code, body := get("/api/status"); code != http.StatusOK || !strings.Contains(body, `"job_id":"j1"`) {
		t.Errorf("/api/status: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "chunks_unfinished_orders 2\n") {
		t.Errorf("/metrics: %d, no chunks_unfinished_orders 2 in %s", code, body)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of its context")
	}
	if out.Len() != 0 {
		t.Errorf("serve printed a result: %q", out.String())
	}
	if log := stderr.String(); !strings.HasSuffix(log, "level=INFO msg=stopped\n") || strings.Count(log, "\n") != 2 {
		t.Errorf("log: want the serving line and the stopped line, got %q", log)
	}
	o.HTTP.Addr = "a:b:c"
	wantRunErr(t, runServe, d, o, driver.ErrInvalid, `invalid: http: address "a:b:c": address a:b:c: too many colons in address (give host:port, e.g. 127.0.0.1:9187)`)
}
