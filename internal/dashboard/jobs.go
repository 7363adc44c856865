package dashboard

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Bounds of /api/jobs.
const (
	defaultJobs = 200
	maxJobs     = 5000
)

// jobsView is /api/jobs: the newest jobs first.
type jobsView struct {
	Total     int       `json:"total"`
	Truncated bool      `json:"truncated"`
	Jobs      []jobView `json:"jobs"`
}

type jobView struct {
	JobID         string     `json:"job_id"`
	Entrypoint    string     `json:"entrypoint"`
	DriverAddress string     `json:"driver_address"`
	Status        string     `json:"status"` // running or finished
	StartTime     *time.Time `json:"start_time,omitempty"`
	EndTime       *time.Time `json:"end_time,omitempty"`
	DurationMs    int64      `json:"duration_ms"`
	WorkerBinary  string     `json:"worker_binary,omitempty"`
	// The job's task attempts the nodes remember (the last 4,096 per
	// node): finished and failed.
	TasksFinished int `json:"tasks_finished"`
	TasksFailed   int `json:"tasks_failed"`
}

func (a *api) jobs(ctx context.Context, r *http.Request) (any, error) {
	limit, err := limitParam(r, "limit", defaultJobs, maxJobs)
	if err != nil {
		return nil, err
	}
	var (
		jobs []*atollpb.JobInfo
		evs  []TaskAttempt
	)
	err = both(func() (err error) {
		jobs, err = a.src.Jobs(ctx)
		return err
	}, func() (err error) {
		evs, err = a.src.Timeline(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	type counts struct{ ok, failed int }
	perJob := map[ids.JobID]*counts{}
	for _, e := range evs {
		c := perJob[e.JobID]
		if c == nil {
			c = &counts{}
			perJob[e.JobID] = c
		}
		if e.Failed {
			c.failed++
		} else {
			c.ok++
		}
	}
	slices.SortStableFunc(jobs, func(x, y *atollpb.JobInfo) int {
		return int(y.GetStartTimeUnixMs() - x.GetStartTimeUnixMs()) // newest first
	})
	v := jobsView{Total: len(jobs), Jobs: []jobView{}}
	now := time.Now()
	for _, j := range jobs {
		id, err := ids.FromBytes(j.GetJobId())
		if err != nil {
			continue // the GCS validates job ids; never seen
		}
		if len(v.Jobs) == limit {
			v.Truncated = true
			break
		}
		start, end := unixMs(j.GetStartTimeUnixMs()), unixMs(j.GetEndTimeUnixMs())
		jv := jobView{JobID: id.String(), Entrypoint: j.GetEntrypoint(), DriverAddress: j.GetDriverAddress(), Status: "running",
			StartTime: timePtr(start), EndTime: timePtr(end), WorkerBinary: j.GetWorkerBinary()}
		if j.GetFinished() {
			jv.Status = "finished"
		}
		switch {
		case !start.IsZero() && !end.IsZero():
			jv.DurationMs = end.Sub(start).Milliseconds()
		case !start.IsZero() && !j.GetFinished():
			jv.DurationMs = now.Sub(start).Milliseconds()
		}
		if c := perJob[id]; c != nil {
			jv.TasksFinished, jv.TasksFailed = c.ok, c.failed
		}
		v.Jobs = append(v.Jobs, jv)
	}
	return v, nil
}
