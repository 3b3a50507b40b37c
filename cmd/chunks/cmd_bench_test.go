package main

import (
	"reflect"
	"testing"
	"time"
)

// bench's run starts a server and child processes for minutes: tests/cli
// runs it (a smoke run); here its options and validation.
func TestBenchOptions(t *testing.T) {
	t.Setenv("CHUNKS_DSN", "host=elsewhere")
	if got := *parsed(t, parseBench, "bench"); !reflect.DeepEqual(got, benchOptions{Duration: 3 * time.Second, Delay: time.Millisecond, Scale: true}) {
		t.Errorf("bench (the environment's DSN ignored): got %+v", got)
	}
	if got := *parsed(t, parseBench, "bench", "--dsn", "dbname=x", "--duration", "5s", "--delay", "0s", "--scale=false", "--scenario", "ceiling", "--scenario", "declared change"); !reflect.DeepEqual(got,
		benchOptions{Duration: 5 * time.Second, DSN: "dbname=x", Scenarios: []string{"ceiling", "declared change"}}) {
		t.Errorf("bench with flags: got %+v", got)
	}
	wantInvalid(t, &benchOptions{Duration: time.Second, Scenarios: []string{"ceiling", "fleeet"}},
		`scenario: no scenario is called "fleeet"; the scenarios are ceiling, chunks, floor, declared change, baseline, side by side, network, parallel, campaign, fleet, loop, application, pacing, scale, memory`)
	wantInvalid(t, &benchOptions{Duration: 0}, "duration: must be positive, and delay not negative")
	wantInvalid(t, &benchOptions{Duration: time.Second, Delay: -time.Millisecond}, "duration: must be positive, and delay not negative")
	wantExit(t, chunksIn(t, nil, "", "bench", "x"), 2, `chunks: usage: bench takes no arguments, got ["x"]`)
	wantExit(t, chunksIn(t, nil, "", "bench", "--duration", "0s"), 2, "chunks: invalid: duration: must be positive")
}
