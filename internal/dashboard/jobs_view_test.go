package dashboard

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
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

// jobLogged answers a job log read with a fixed chunk.
type jobLogged struct {
	Source
	job   ids.JobID
	chunk *atollpb.LogChunk
}

func (j jobLogged) JobLog(_ context.Context, job ids.JobID, maxBytes int) (*atollpb.LogChunk, error) {
	if job != j.job {
		return nil, errs.NotFoundf("no job %s", job)
	}
	c := proto.CloneOf(j.chunk)
	if len(c.Data) > maxBytes {
		c.Offset += uint64(len(c.Data) - maxBytes)
		c.Data = c.Data[len(c.Data)-maxBytes:]
	}
	return c, nil
}

// TestJobLogView: /api/logs/job/{job} is the end of a submitted job's log,
// marked truncated when it is not the whole, final once the job ended;
// an unknown job is NOT_FOUND, a malformed id INVALID_ARGUMENT; and the
// logs need the reader token like the nodes' logs.
func TestJobLogView(t *testing.T) {
	job := ids.NewJobID()
	a := &api{src: jobLogged{job: job, chunk: &atollpb.LogChunk{Data: []byte("line 1\nline 2\n"), Size: 14, Final: true}}}
	get := func(path string) (any, error) {
		r := httptest.NewRequest("GET", path, nil)
		r.SetPathValue("job", strings.TrimPrefix(strings.Split(path, "?")[0], "/api/logs/job/"))
		return a.jobLog(context.Background(), r)
	}
	got, err := get("/api/logs/job/" + job.String())
	if v, ok := got.(jobLogView); err != nil || !ok || v.Text != "line 1\nline 2\n" || v.Truncated || !v.Final || v.SizeBytes != 14 {
		t.Fatalf("the whole log: %+v, %v", got, err)
	}
	got, err = get("/api/logs/job/" + job.String() + "?bytes=7")
	if v, ok := got.(jobLogView); err != nil || !ok || v.Text != "line 2\n" || !v.Truncated {
		t.Fatalf("its last 7 bytes: %+v, %v", got, err)
	}
	if _, err := get("/api/logs/job/" + ids.NewJobID().String()); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("an unknown job: %v, want NOT_FOUND", err)
	}
	if _, err := get("/api/logs/job/xyz"); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("a malformed id: %v, want INVALID_ARGUMENT", err)
	}
	acc := &access{token: "t", loopback: true}
	if !acc.needsLogin("/api/logs/job/" + job.String()) {
		t.Error("a job's log is served without the reader token")
	}
}
