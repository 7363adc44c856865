package dashboard

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// recorded is a Source answering with fixed GCS records and task
// attempts: the views' input, as the GCS and the nodes give it.
type recorded struct {
	Source
	jobs     []*atollpb.JobInfo
	attempts []TaskAttempt
}

func (r recorded) Jobs(context.Context) ([]*atollpb.JobInfo, error) { return r.jobs, nil }
func (r recorded) Timeline(context.Context) ([]TaskAttempt, error)  { return r.attempts, nil }

// TestJobsViewAsTheCLIShowsThem: a submitted job is one row with its
// state and exit code as `atoll job list` shows them, and the tasks of
// the job its driver ran; a driver's own job stays a row of its own.
func TestJobsViewAsTheCLIShowsThem(t *testing.T) {
	sub, driver, own := ids.NewJobID(), ids.NewJobID(), ids.NewJobID()
	stopped := ids.NewJobID()
	now := time.Now().UnixMilli()
	src := recorded{
		jobs: []*atollpb.JobInfo{
			{JobId: sub.Bytes(), Submitted: true, State: atollpb.JobState_JOB_FAILED, Finished: true, ExitCode: 3,
				Message: "exit status 3", StartTimeUnixMs: now - 3000, EndTimeUnixMs: now - 1000, Entrypoint: "etl"},
			{JobId: driver.Bytes(), SubmissionId: sub.Bytes(), StartTimeUnixMs: now - 2900, Finished: true},
			{JobId: stopped.Bytes(), Submitted: true, State: atollpb.JobState_JOB_STOPPED, Finished: true, ExitCode: -1,
				StartTimeUnixMs: now - 2000},
			{JobId: own.Bytes(), StartTimeUnixMs: now - 500},
		},
		attempts: []TaskAttempt{{JobID: driver}, {JobID: driver, Failed: true}, {JobID: own}},
	}
	a := &api{src: src}
	got, err := a.jobs(context.Background(), httptest.NewRequest("GET", "/api/jobs", nil))
	if err != nil {
		t.Fatal(err)
	}
	v := got.(jobsView)
	if v.Total != 3 || len(v.Jobs) != 3 {
		t.Fatalf("%d jobs (total %d), want 3: the submission with its driver's job, the stopped one, the driver's own: %+v", len(v.Jobs), v.Total, v.Jobs)
	}
	byID := map[string]jobView{}
	for _, j := range v.Jobs {
		byID[j.JobID] = j
	}
	if j := byID[sub.String()]; j.Status != "failed" || j.ExitCode == nil || *j.ExitCode != 3 || j.Message != "exit status 3" ||
		j.DriverJobID != driver.String() || j.TasksFinished != 1 || j.TasksFailed != 1 || !j.Submitted {
		t.Errorf("submitted job %+v: want failed, exit 3, its driver's job and its 2 tasks", j)
	}
	if j := byID[stopped.String()]; j.Status != "stopped" {
		t.Errorf("stopped job %+v: want stopped", j)
	}
	if j := byID[own.String()]; j.Status != "running" || j.Submitted || j.ExitCode != nil || j.TasksFinished != 1 {
		t.Errorf("driver's own job %+v: want running with its task", j)
	}
	if _, ok := byID[driver.String()]; ok {
		t.Errorf("the submitted job's driver job is listed apart")
	}
}
