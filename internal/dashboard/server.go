package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The HTTP server's bounds.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 16 << 10
	// maxConcurrent API requests are served at once; a request waits at
	// most queueWait for its turn, then gets 503.
	maxConcurrent = 8
	queueWait     = 5 * time.Second
	// requestTimeout bounds each API request's queries.
	requestTimeout = 15 * time.Second
)

// TraceIDPlaceholder is replaced by a task's trace id in Config.TraceURL.
const TraceIDPlaceholder = "{trace_id}"

// Config configures a dashboard server.
type Config struct {
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr string
	// Source answers the API's queries.
	Source Source
	// TraceURL, if set, links each task to its trace: an http(s) URL in
	// which TraceIDPlaceholder stands for the trace id.
	TraceURL string
	// Token, if set, is what a reader proves to read the logs and, when
	// the dashboard listens beyond loopback, the rest of the API: the
	// cluster's reader token, sent as "Authorization: Bearer" or turned
	// into a session cookie by a login on the page.
	Token string
	// Hosts are the names (besides IP addresses, localhost and this
	// machine's name) the dashboard answers to; a request naming another
	// Host gets 421 (a page of another site reaching it by DNS rebinding).
	Hosts []string
	// GoneNodesShownFor is how long the cluster view lists a node after it
	// left or died (a request's ?gone_within= overrides it); default
	// DefaultGoneNodesShownFor, negative: forever.
	GoneNodesShownFor time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// DefaultGoneNodesShownFor is how long the cluster view lists a node
// after it left or died, as `atoll status` does.
const DefaultGoneNodesShownFor = time.Hour

// Server is a running dashboard.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	url  string
	done chan struct{}
	log  *slog.Logger
}

// Start listens on cfg.Addr and serves the dashboard until Close. A bad
// config is ErrInvalidArgument; a port in use is ErrUnavailable.
func Start(cfg Config) (*Server, error) {
	if cfg.Source == nil {
		return nil, errs.Invalidf("dashboard: no Source")
	}
	if err := CheckTraceURL("dashboard.Config.TraceURL", cfg.TraceURL); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.GoneNodesShownFor == 0:
		cfg.GoneNodesShownFor = DefaultGoneNodesShownFor
	case cfg.GoneNodesShownFor < 0:
		cfg.GoneNodesShownFor = 0 // forever
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, errs.Unavailablef("dashboard: listen on %s: %v", cfg.Addr, err)
	}
	s := &Server{ln: ln, url: "http://" + ln.Addr().String(), done: make(chan struct{}), log: cfg.Logger}
	s.srv = &http.Server{
		Handler:           newHandler(cfg, newAccess(cfg, ln)),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("dashboard stopped serving", "err", err)
		}
	}()
	return s, nil
}

// URL is the dashboard's address, http://host:port.
func (s *Server) URL() string { return s.url }

// Close stops the server: it stops listening, waits for the requests in
// progress until ctx ends, then closes their connections.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}

// CheckTraceURL validates a trace URL (Config.TraceURL) given as name:
// "" or an http(s) URL with TraceIDPlaceholder in it; else
// ErrInvalidArgument.
func CheckTraceURL(name, t string) error {
	if t == "" {
		return nil
	}
	u, err := url.Parse(strings.ReplaceAll(t, TraceIDPlaceholder, "0"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.Contains(t, TraceIDPlaceholder) {
		return errs.Invalidf("%s %q: want an http(s) URL with %s in it, e.g. http://localhost:16686/trace/%s",
			name, t, TraceIDPlaceholder, TraceIDPlaceholder)
	}
	return nil
}

// newHandler routes the page, its assets and the API.
func newHandler(cfg Config, acc *access) http.Handler {
	a := &api{src: cfg.Source, traceURL: cfg.TraceURL, goneWithin: cfg.GoneNodesShownFor, log: cfg.Logger, slots: make(chan struct{}, maxConcurrent)}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", pageHandler())
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /api/cluster", a.serve(a.cluster))
	mux.HandleFunc("GET /api/jobs", a.serve(a.jobs))
	mux.HandleFunc("GET /api/tasks", a.serve(a.tasks))
	mux.HandleFunc("GET /api/actors", a.serve(a.actors))
	mux.HandleFunc("GET /api/placement-groups", a.serve(a.placementGroups))
	mux.HandleFunc("GET /api/timeline", a.serve(a.timeline))
	mux.HandleFunc("GET /api/logs/{node}", a.serve(a.nodeLog))
	mux.HandleFunc("GET /api/logs/job/{job}", a.serve(a.jobLog))
	mux.HandleFunc("POST /api/login", acc.login)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s not allowed: the dashboard's API is read-only (GET; POST /api/login only)", r.Method))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Errorf("no API endpoint %s", r.URL.Path))
	})
	return securityHeaders(acc.wrap(mux))
}

// securityHeaders keeps the page to its own assets and out of frames.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}
