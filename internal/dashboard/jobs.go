package dashboard

import (
	"context"
	"net/http"
	"slices"
	"strings"
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
	JobID         string `json:"job_id"`
	Entrypoint    string `json:"entrypoint"`
	DriverAddress string `json:"driver_address"`
	// Status is a submitted job's state as `atoll job list` shows it, in
	// lower case (pending, running, succeeded, failed, stopped); a
	// driver's own job is running or finished.
	Status string `json:"status"`
	// Submitted: started with `atoll job submit`; its exit code and, when
	// it failed or was stopped, why.
	Submitted bool   `json:"submitted"`
	ExitCode  *int32 `json:"exit_code,omitempty"`
	Message   string `json:"message,omitempty"`
	// DriverJobID is the job the submitted program's driver ran its tasks
	// in (listed as part of this one, not apart).
	DriverJobID  string     `json:"driver_job_id,omitempty"`
	StartTime    *time.Time `json:"start_time,omitempty"`
	EndTime      *time.Time `json:"end_time,omitempty"`
	DurationMs   int64      `json:"duration_ms"`
	WorkerBinary string     `json:"worker_binary,omitempty"`
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
	// A submitted job and the job its driver ran are one row: the
	// submission's, with the driver's tasks.
	submitted := map[ids.JobID]bool{}
	for _, j := range jobs {
		if id, err := ids.FromBytes(j.GetJobId()); err == nil && j.GetSubmitted() {
			submitted[id] = true
		}
	}
	driverOf := map[ids.JobID]ids.JobID{}
	kept := jobs[:0:0]
	for _, j := range jobs {
		id, err := ids.FromBytes(j.GetJobId())
		if err != nil {
			continue // the GCS validates job ids; never seen
		}
		if sub, err := ids.FromBytes(j.GetSubmissionId()); err == nil && submitted[sub] && !j.GetSubmitted() {
			driverOf[sub] = id
			continue
		}
		kept = append(kept, j)
	}
	v := jobsView{Total: len(kept), Jobs: []jobView{}}
	now := time.Now()
	for _, j := range kept {
		id, _ := ids.FromBytes(j.GetJobId())
		if len(v.Jobs) == limit {
			v.Truncated = true
			break
		}
		start, end := unixMs(j.GetStartTimeUnixMs()), unixMs(j.GetEndTimeUnixMs())
		jv := jobView{JobID: id.String(), Entrypoint: j.GetEntrypoint(), DriverAddress: j.GetDriverAddress(), Status: "running",
			StartTime: timePtr(start), EndTime: timePtr(end), WorkerBinary: j.GetWorkerBinary(), Submitted: j.GetSubmitted()}
		switch {
		case j.GetSubmitted():
			jv.Status = strings.ToLower(strings.TrimPrefix(j.GetState().String(), "JOB_"))
			jv.Message = j.GetMessage()
			if j.GetFinished() { // as `atoll job list` shows it
				code := j.GetExitCode()
				jv.ExitCode = &code
			}
		case j.GetFinished():
			jv.Status = "finished"
		}
		taskJob := id
		if d, ok := driverOf[id]; ok {
			jv.DriverJobID, taskJob = d.String(), d
		}
		switch {
		case !start.IsZero() && !end.IsZero():
			jv.DurationMs = end.Sub(start).Milliseconds()
		case !start.IsZero() && !j.GetFinished():
			jv.DurationMs = now.Sub(start).Milliseconds()
		}
		if c := perJob[taskJob]; c != nil {
			jv.TasksFinished, jv.TasksFailed = c.ok, c.failed
		}
		v.Jobs = append(v.Jobs, jv)
	}
	return v, nil
}
