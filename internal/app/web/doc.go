// Package web serves what chunks worker --http and chunks serve --http
// show: the status page (every job with its progress, state, drift, rate
// and ETA; every live worker; each job's report), its JSON, /metrics,
// /healthz and /readyz.
//
// The page is plain server-rendered HTML (html/template, so every value is
// escaped) with its CSS and a little JavaScript embedded in the binary; the
// script polls the JSON endpoint and updates the page in place, with no
// reload. Each refresh is one query (SQL status_page) however many jobs
// there are: the page lists at most [Server.PageSize] jobs and links to the
// next ones. The server is read-only and answers GET (and HEAD) only; every
// response carries a Content-Security-Policy that allows nothing but this
// server's own script, style and JSON. [Listen] binds loopback unless told
// otherwise, and [Serve] says so when the address is not loopback. On
// loopback, [Serve] answers only a request whose Host names loopback (421
// Misdirected Request otherwise), against DNS rebinding. An answer never
// shows a database error's text, which names the user, the database, the
// host and the port: it gives one of a few fixed reasons, and the error
// goes to the log.
package web
