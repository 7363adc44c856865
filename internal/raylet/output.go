package raylet

import (
	"io"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// ProcessOutput captures one worker process's stdout and stderr
// (ProcessConfig.OutputFor): the node keeps each worker's output and
// streams its lines to the driver of the job whose task printed them.
type ProcessOutput interface {
	// Stdout and Stderr receive the process's two streams (each through
	// a pipe os/exec copies from).
	Stdout() io.Writer
	Stderr() io.Writer
	// Started tells the process id once it runs; Exited that it ended
	// and its streams are drained.
	Started(pid int)
	Exited()
}

// OutputFunc makes the ProcessOutput of a new worker process; current
// tells, whenever the process writes, the task (or the actor's creation
// task) it runs or last ran, nil before its first.
type OutputFunc func(worker ids.WorkerID, current func() *atollpb.TaskSpec) ProcessOutput

// Current is the spec of the task the worker runs now (the first of
// the attempts pushed to it: it runs them in order) or, between tasks,
// of the last one it finished (its output may still be in the pipes when
// its result is in); nil before the first. Safe from any goroutine
// (worker output capture reads it).
func (s *Slot) Current() *atollpb.TaskSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) > 0 {
		return s.inflight[0].spec
	}
	return s.last
}
