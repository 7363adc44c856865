package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// api serves the JSON endpoints. It keeps nothing between requests.
type api struct {
	src      Source
	traceURL string
	// goneWithin: how long /api/cluster lists a node after it ended (0:
	// forever).
	goneWithin time.Duration
	log        *slog.Logger
	// slots bounds the requests served at once (maxConcurrent).
	slots chan struct{}
}

// serve wraps an endpoint: it waits for a slot (queueWait at most),
// bounds the request's time, writes the endpoint's value as JSON or its
// error with the status its kind calls for.
func (a *api) serve(endpoint func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait := time.NewTimer(queueWait)
		defer wait.Stop()
		select {
		case a.slots <- struct{}{}:
			defer func() { <-a.slots }()
		case <-wait.C:
			writeError(w, http.StatusServiceUnavailable, errors.New("the dashboard is busy: try again"))
			return
		case <-r.Context().Done():
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		v, err := endpoint(ctx, r)
		if err != nil {
			code := statusOf(err)
			if code >= 500 {
				a.log.Warn("dashboard request failed", "path", r.URL.Path, "err", err)
			}
			writeError(w, code, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		if err := enc.Encode(v); err != nil {
			a.log.Debug("dashboard: write response", "path", r.URL.Path, "err", err)
		}
	}
}

// statusOf is the HTTP status of an endpoint's error.
func statusOf(err error) int {
	switch {
	case errors.Is(err, errs.ErrInvalidArgument):
		return http.StatusBadRequest
	case errors.Is(err, errs.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errs.ErrPermissionDenied):
		return http.StatusForbidden
	case errors.Is(err, errs.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON of a failed request.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: strings.TrimPrefix(err.Error(), "atoll: ")})
}

// Parameters of the API.

// limitParam reads the query parameter name: a count from 1 to max,
// def when absent.
func limitParam(r *http.Request, name string, def, max int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, errs.Invalidf("%s=%q: want a number from 1 to %d", name, s, max)
	}
	return n, nil
}

// idParam reads the query parameter name: a hex id, or zero when absent.
func idParam(r *http.Request, name string) (ids.ID16, error) {
	return parseID(name, r.URL.Query().Get(name))
}

func parseID(name, s string) (ids.ID16, error) {
	if s == "" {
		return ids.ID16{}, nil
	}
	id, err := ids.FromHex(s)
	if err != nil || id.IsZero() {
		return ids.ID16{}, errs.Invalidf("%s=%q: want an id of 32 hex digits", name, truncate(s, 64))
	}
	return id, nil
}

// maxTextParam bounds free-text parameters (a task name filter).
const maxTextParam = 256

func textParam(r *http.Request, name string) (string, error) {
	s := r.URL.Query().Get(name)
	if len(s) > maxTextParam {
		return "", errs.Invalidf("%s: at most %d bytes", name, maxTextParam)
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// idString is id in hex, "" for the zero id.
func idString(id ids.ID16) string {
	if id.IsZero() {
		return ""
	}
	return id.String()
}

// timePtr is t for JSON, nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// unixMs is a GCS time in milliseconds, the zero time for 0.
func unixMs(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// role names a node's part in the cluster, as `atoll status` does.
func role(n NodeStatus) string {
	switch {
	case n.IsHead:
		return "head"
	case n.Driver:
		return "driver"
	}
	return "worker"
}

// traceLink is the link to a trace, "" without a trace URL or trace id.
func (a *api) traceLink(traceID string) string {
	if a.traceURL == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(a.traceURL, TraceIDPlaceholder, traceID)
}

// both runs f and g concurrently and returns their errors, f's first.
func both(f, g func() error) error {
	ch := make(chan error, 1)
	go func() { ch <- g() }()
	err := f()
	if gerr := <-ch; err == nil {
		err = gerr
	}
	return err
}
