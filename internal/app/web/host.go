package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// misdirected is the answer to a Host that does not name loopback.
const misdirected = "misdirected request: this server is bound to loopback and answers only the Host " +
	"localhost, 127.0.0.0/8 or [::1] (any port)"

// refuseHost is the 421 answer, with the headers of every answer.
var refuseHost = secure(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, misdirected, http.StatusMisdirectedRequest)
}))

// loopbackOnly answers 421 Misdirected Request to every request whose Host
// does not name loopback ([loopbackHost]), on every path. A server bound
// to loopback is reached by another name only through DNS rebinding: a web
// page whose own name now resolves to 127.0.0.1 would read the fleet.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			refuseHost.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host, a request's Host (a name or an
// address, with or without a port), names loopback: localhost (in any
// case), an address of 127.0.0.0/8, or ::1 (in brackets). Names that
// merely resolve to loopback, such as localhost.example.com, do not: the
// server cannot tell them from a rebound name.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}
