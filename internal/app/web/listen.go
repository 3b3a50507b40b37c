package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The http.Server's bounds.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
	shutdownTimeout   = 5 * time.Second
)

// Listen binds addr (host:port; port 0 picks a free one). An address
// without a host, such as ":9187", binds 127.0.0.1: nothing is reachable
// from the network unless a host says so.
func Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("http: address %q: %w (give host:port, e.g. 127.0.0.1:9187)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.Listen("tcp", net.JoinHostPort(host, port))
}

// Loopback reports whether l is bound to a loopback address.
func Loopback(l net.Listener) bool {
	a, ok := l.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// Serve serves h on l until ctx ends, then shuts down, letting the
// requests in flight finish (for up to 5 s). It logs where it serves, and
// warns when l is not loopback. The http.Server bounds every request:
// headers in 5 s, the whole request in 10 s, the answer in 30 s.
//
// On loopback, a request whose Host does not name loopback (localhost,
// 127.0.0.0/8, [::1], any port) is answered 421 Misdirected Request,
// whatever its path: a web page cannot read the server by rebinding its
// own name to 127.0.0.1. On another address any Host is answered: the
// operator chose to open it, and access control is theirs (docs/production.md
// "Seeing it run").
func Serve(ctx context.Context, l net.Listener, h http.Handler, log *slog.Logger) error {
	if Loopback(l) {
		h = loopbackOnly(h)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	url := "http://" + l.Addr().String() + "/"
	if Loopback(l) {
		log.Info("serving the status page, /metrics, /healthz and /readyz", "url", url)
	} else {
		log.Warn("serving on an address that is not loopback: anyone who can reach it sees every job, tenant and worker "+
			"(read-only); put your own access control in front of it, or bind 127.0.0.1", "url", url)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("http: shutting down: %w", err)
	}
	return nil
}
