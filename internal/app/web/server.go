package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

// Defaults of a [Server].
const (
	DefaultPageSize = 100
	DefaultRefresh  = time.Second
	MinRefresh      = 100 * time.Millisecond
	MaxRefresh      = time.Minute
	MaxPageSize     = 1000
)

// queryTimeout bounds each request's query.
const queryTimeout = 5 * time.Second

// csp lets the page load nothing but this server's own script, style and
// JSON: no inline script or style, no other origin, no frames, no forms.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server is the status page, its JSON, the health checks and (when
// Metrics is set) /metrics, over one database. Set the fields, then serve
// [Server.Handler].
type Server struct {
	// DB is where the queries go; its search_path must reach the chunks
	// schema. Each request runs one query.
	DB driver.DB
	// Title says what the page is of (the schema's name).
	Title string
	// Metrics, when not nil, is served at /metrics.
	Metrics prometheus.Gatherer
	// PageSize is the most jobs one page lists, 1 to [MaxPageSize]. Zero:
	// [DefaultPageSize].
	PageSize int
	// Refresh is how often the page's script asks for news. Zero:
	// [DefaultRefresh].
	Refresh time.Duration
	// Log receives what went wrong. Nil: slog.Default().
	Log *slog.Logger
}

// Handler routes every request. Only GET (and HEAD) are answered; any
// other method is 405.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /api/status", s.status)
	mux.HandleFunc("GET /jobs/{id}", s.reportPage)
	mux.HandleFunc("GET /api/jobs/{id}/report", s.reportJSON)
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /static/", http.StripPrefix("/static/", cached(http.FileServerFS(static))))
	if s.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log()}}))
	}
	return secure(mux)
}

// secure adds the headers every response carries.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// cached lets a browser keep the embedded files, asking again each time.
func cached(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Server) pageSize() int {
	if s.PageSize <= 0 {
		return DefaultPageSize
	}
	return min(s.PageSize, MaxPageSize)
}

func (s *Server) refresh() time.Duration {
	if s.Refresh <= 0 {
		return DefaultRefresh
	}
	return s.Refresh
}

// look is one page of the fleet: the jobs after the request's ?after=.
// The status code says what went wrong.
func (s *Server) look(r *http.Request) (View, int, error) {
	after := r.URL.Query().Get("after")
	if err := checkAfter(after); err != nil {
		return View{}, http.StatusBadRequest, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	ov, err := fleet.LoadOverview(ctx, s.DB, after, s.pageSize())
	if err != nil {
		return View{}, http.StatusServiceUnavailable, err
	}
	return newView(s.Title, ov, after), http.StatusOK, nil
}

// checkAfter refuses an ?after= that is not a job id (the page's links
// only ever give one), before any query: a NUL or invalid UTF-8 is the
// client's mistake, not the database's.
func checkAfter(after string) error {
	if after == "" || driver.CheckJobID(after) == nil {
		return nil
	}
	return fmt.Errorf("after: must be a job id (1 to %d ASCII letters, digits, _ or -), got %s", driver.MaxNameLen, driver.Excerpt(after, true))
}

// pageData is what the status page's template reads.
type pageData struct {
	View
	RefreshMs  int64
	Blank      JobView      // the row the script copies for a job that appears
	NoWorker   WorkerView   // the row it copies for a worker that appears
	NoCampaign CampaignView // the row it copies for a campaign that appears
	NoPaused   PausedView   // the row it copies for a paused job that appears
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	v, code, err := s.look(r)
	if err != nil {
		s.fail(w, code, "could not read the fleet", err)
		return
	}
	s.render(w, "page.html", pageData{View: v, RefreshMs: s.refresh().Milliseconds()})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	v, code, err := s.look(r)
	if err != nil {
		s.fail(w, code, "could not read the fleet", err)
		return
	}
	s.json(w, v)
}

// reportData is what a job's report page reads.
type reportData struct {
	Title  string
	JobID  string
	Report driver.JobReport
}

// report reads the job's report; the status code says what went wrong.
func (s *Server) report(r *http.Request) (string, driver.JobReport, int, error) {
	id := r.PathValue("id")
	if err := driver.CheckJobID(id); err != nil {
		return id, driver.JobReport{}, http.StatusBadRequest, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	rep, err := driver.Report(ctx, s.DB, id)
	switch {
	case errors.Is(err, driver.ErrConflict):
		return id, rep, http.StatusNotFound, err // unknown, or a stored job that cannot be read
	case err != nil:
		return id, rep, http.StatusServiceUnavailable, err
	}
	return id, rep, http.StatusOK, nil
}

func (s *Server) reportPage(w http.ResponseWriter, r *http.Request) {
	id, rep, code, err := s.report(r)
	if err != nil {
		s.fail(w, code, "no report", err)
		return
	}
	s.render(w, "report.html", reportData{Title: s.Title, JobID: id, Report: rep})
}

func (s *Server) reportJSON(w http.ResponseWriter, r *http.Request) {
	_, rep, code, err := s.report(r)
	if err != nil {
		s.fail(w, code, "no report", err)
		return
	}
	s.json(w, rep)
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n")) // a client that went away needs no answer
}

// installedQuery says whether what the page reads is on the search_path.
const installedQuery = `select to_regprocedure('status_page(text, integer)') is not null
   and to_regclass('job_progress') is not null`

// ErrNotInstalled is what [Server.Ready] says when the search_path has no
// chunks, or an older one than this binary reads.
var ErrNotInstalled = errors.New("chunks is not installed on this search_path, or is older than this binary: run chunks migrate")

// Ready says whether the page can be served: nil when the database
// answers and chunks is installed and up to date on the search_path (a
// [*fleet.SchemaError] when its schema is older than this binary's).
func (s *Server) Ready(ctx context.Context) error {
	_, err := s.ready(ctx)
	return err
}

// ready is [Server.Ready], with the schema versions it compared.
func (s *Server) ready(ctx context.Context) (fleet.SchemaVersions, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var installed bool
	if err := s.DB.QueryRow(ctx, installedQuery).Scan(&installed); err != nil {
		return fleet.SchemaVersions{}, fmt.Errorf("the database does not answer: %w", err)
	}
	if !installed {
		if err := driver.CheckAccess(ctx, s.DB, driver.Viewer); err != nil {
			return fleet.SchemaVersions{}, err // a role without access sees no chunks
		}
		return fleet.SchemaVersions{}, ErrNotInstalled
	}
	v, err := fleet.LoadSchemaVersions(ctx, s.DB)
	if err != nil {
		return v, fmt.Errorf("the database does not answer: %w", err)
	}
	if v.Compare == "older" {
		return v, &fleet.SchemaError{Versions: v}
	}
	return v, nil
}

// readyz answers 200 when [Server.Ready] (and says so when the database's
// schema is newer than this binary's), 503 with the reason otherwise.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	v, err := s.ready(r.Context())
	var older *fleet.SchemaError
	if errors.As(err, &older) {
		http.Error(w, "not ready: "+older.Versions.String(), http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		s.fail(w, http.StatusServiceUnavailable, "not ready", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	body := "ready\n"
	if msg := v.String(); msg != "" {
		body += "warning: " + msg + "\n"
	}
	_, _ = w.Write([]byte(body)) // a client that went away needs no answer
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		s.log().Error("web: rendering "+name+" failed", "error", err) // the status line is already sent
	}
}

func (s *Server) json(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.log().Error("web: writing JSON failed", "error", err)
	}
}

// fail answers code with what went wrong, as plain text (http.Error). A
// client's mistake (4xx) is told as it is and not logged. A server error
// is logged in full and told as one of a few fixed reasons ([reason]):
// the error's text names the database, its user, host and port.
func (s *Server) fail(w http.ResponseWriter, code int, what string, err error) {
	if code < 500 {
		http.Error(w, what+": "+err.Error(), code)
		return
	}
	s.log().Error("web: "+what, "error", err)
	http.Error(w, what+": "+reason(err), code)
}

// slogPrinter is promhttp's error log on slog.
type slogPrinter struct{ log *slog.Logger }

// Println logs a /metrics error.
func (p slogPrinter) Println(v ...any) { p.log.Error("metrics", "error", v) }
