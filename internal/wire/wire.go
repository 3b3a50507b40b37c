// Package wire watches a pgx connection's bytes on the network: it counts
// round trips (for tests and benchmarks) and can delay traffic (a loopback
// proxy that simulates a network between client and server).
package wire

import (
	"context"
	"net"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Counter counts round trips on one connection: each burst of client writes
// that follows a read (or starts the connection) is one.
type Counter struct {
	net.Conn
	mu        sync.Mutex
	lastWrite bool
	trips     int
}

// Write counts the start of a new burst of writes.
func (c *Counter) Write(b []byte) (int, error) {
	c.mu.Lock()
	if !c.lastWrite {
		c.trips++
		c.lastWrite = true
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// Read ends a burst of writes.
func (c *Counter) Read(b []byte) (int, error) {
	c.mu.Lock()
	c.lastWrite = false
	c.mu.Unlock()
	return c.Conn.Read(b)
}

// Take returns the round trips since the last Take.
func (c *Counter) Take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.trips
	c.trips = 0
	return n
}

// Count makes cfg's next connection report to the returned function, which
// gives that connection's Counter once it is open.
func Count(cfg *pgx.ConnConfig) func() *Counter {
	var mu sync.Mutex
	var counter *Counter
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		counter = &Counter{Conn: nc}
		return counter, nil
	}
	return func() *Counter {
		mu.Lock()
		defer mu.Unlock()
		return counter
	}
}
