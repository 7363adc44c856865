package dashboard

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Bounds of /api/tasks and /api/timeline.
const (
	defaultTasks    = 500
	maxTasks        = 5000
	defaultTimeline = 2000
	maxTimeline     = 20000
)

// tasksView is /api/tasks: counts by state and the matching attempts.
type tasksView struct {
	// Counts: queued and running are the whole cluster's now (the nodes'
	// load reports); finished and failed count the matching attempts
	// among those the nodes remember (the last 4,096 per node).
	Counts taskCounts `json:"counts"`
	// Matching is how many remembered attempts match the filter; Tasks
	// holds the newest of them, at most limit.
	Matching  int        `json:"matching"`
	Truncated bool       `json:"truncated"`
	Tasks     []taskView `json:"tasks"`
}

type taskCounts struct {
	Queued   int `json:"queued"`
	Running  int `json:"running"`
	Finished int `json:"finished"`
	Failed   int `json:"failed"`
}

// taskView is one finished task attempt.
type taskView struct {
	TaskID     string    `json:"task_id"`
	Name       string    `json:"name"`
	State      string    `json:"state"` // finished or failed
	JobID      string    `json:"job_id,omitempty"`
	NodeID     string    `json:"node_id"`
	WorkerID   string    `json:"worker_id"`
	StartTime  time.Time `json:"start_time"`
	EndTime    time.Time `json:"end_time"`
	DurationMs float64   `json:"duration_ms"`
	TraceID    string    `json:"trace_id,omitempty"`
	TraceURL   string    `json:"trace_url,omitempty"`
	// Error and RemoteStack are why a failed attempt failed.
	Error       string `json:"error,omitempty"`
	RemoteStack string `json:"remote_stack,omitempty"`
}

// taskFilter selects attempts: by job, node, state and a substring of
// the name (query parameters job, node, state, name).
type taskFilter struct {
	job, node ids.ID16
	state     string // "", "finished" or "failed"
	name      string
}

func parseTaskFilter(r *http.Request) (taskFilter, error) {
	var f taskFilter
	var err error
	if f.job, err = idParam(r, "job"); err != nil {
		return f, err
	}
	if f.node, err = idParam(r, "node"); err != nil {
		return f, err
	}
	if f.name, err = textParam(r, "name"); err != nil {
		return f, err
	}
	switch f.state = r.URL.Query().Get("state"); f.state {
	case "", "finished", "failed":
	default:
		return f, errs.Invalidf("state=%q: want finished or failed", truncate(f.state, 32))
	}
	return f, nil
}

func (f taskFilter) match(e TaskAttempt) bool {
	return (f.job.IsZero() || e.JobID == f.job) && (f.node.IsZero() || e.NodeID == f.node) &&
		(f.state == "" || (f.state == "failed") == e.Failed) && (f.name == "" || strings.Contains(e.Name, f.name))
}

func stateOf(e TaskAttempt) string {
	if e.Failed {
		return "failed"
	}
	return "finished"
}

func (a *api) tasks(ctx context.Context, r *http.Request) (any, error) {
	f, err := parseTaskFilter(r)
	if err != nil {
		return nil, err
	}
	limit, err := limitParam(r, "limit", defaultTasks, maxTasks)
	if err != nil {
		return nil, err
	}
	var (
		st  *Status
		evs []TaskAttempt
	)
	err = both(func() (err error) {
		st, err = a.src.Status(ctx)
		return err
	}, func() (err error) {
		evs, err = a.src.Timeline(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	v := tasksView{Tasks: []taskView{}}
	for _, n := range st.Nodes {
		if n.Alive && n.Reporting {
			v.Counts.Queued += n.Queued
			v.Counts.Running += n.Running
		}
	}
	// Newest first.
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if !f.match(e) {
			continue
		}
		v.Matching++
		if e.Failed {
			v.Counts.Failed++
		} else {
			v.Counts.Finished++
		}
		if len(v.Tasks) == limit {
			v.Truncated = true
			continue
		}
		v.Tasks = append(v.Tasks, taskView{TaskID: e.TaskID.String(), Name: e.Name, State: stateOf(e), JobID: idString(e.JobID),
			NodeID: e.NodeID.String(), WorkerID: e.WorkerID.String(), StartTime: e.Start.UTC(), EndTime: e.End.UTC(),
			DurationMs: float64(e.End.Sub(e.Start).Microseconds()) / 1000, TraceID: e.TraceID, TraceURL: a.traceLink(e.TraceID),
			Error: e.Error, RemoteStack: e.RemoteStack})
	}
	return v, nil
}

// timelineView is /api/timeline: the newest attempts (at most limit),
// oldest first, in microseconds since the Unix epoch, for the page to
// draw one lane per worker, grouped by node.
type timelineView struct {
	StartUs   int64           `json:"start_us"`
	EndUs     int64           `json:"end_us"`
	Truncated bool            `json:"truncated"`
	Events    []timelineEvent `json:"events"`
}

type timelineEvent struct {
	NodeID   string `json:"node_id"`
	WorkerID string `json:"worker_id"`
	TaskID   string `json:"task_id"`
	JobID    string `json:"job_id,omitempty"`
	Name     string `json:"name"`
	StartUs  int64  `json:"start_us"`
	EndUs    int64  `json:"end_us"`
	Failed   bool   `json:"failed"`
	TraceID  string `json:"trace_id,omitempty"`
}

func (a *api) timeline(ctx context.Context, r *http.Request) (any, error) {
	f, err := parseTaskFilter(r)
	if err != nil {
		return nil, err
	}
	limit, err := limitParam(r, "limit", defaultTimeline, maxTimeline)
	if err != nil {
		return nil, err
	}
	evs, err := a.src.Timeline(ctx)
	if err != nil {
		return nil, err
	}
	var kept []TaskAttempt
	truncated := false
	for i := len(evs) - 1; i >= 0 && !truncated; i-- {
		if f.match(evs[i]) {
			if len(kept) == limit {
				truncated = true
				continue
			}
			kept = append(kept, evs[i])
		}
	}
	v := timelineView{Events: make([]timelineEvent, 0, len(kept)), Truncated: truncated}
	for i := len(kept) - 1; i >= 0; i-- {
		e := kept[i]
		te := timelineEvent{NodeID: e.NodeID.String(), WorkerID: e.WorkerID.String(), TaskID: e.TaskID.String(), JobID: idString(e.JobID),
			Name: e.Name, StartUs: e.Start.UnixMicro(), EndUs: max(e.End.UnixMicro(), e.Start.UnixMicro()), Failed: e.Failed, TraceID: e.TraceID}
		if v.StartUs == 0 || te.StartUs < v.StartUs {
			v.StartUs = te.StartUs
		}
		v.EndUs = max(v.EndUs, te.EndUs)
		v.Events = append(v.Events, te)
	}
	return v, nil
}
