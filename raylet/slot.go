package raylet

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Slot is where the raylet hands a task attempt to a worker and where the
// worker hands the result back, without a mailbox hop on either side:
// the raylet assigns on its own goroutine (a process worker's PushTask
// frame is written from there), and whoever produces the result — the
// connection reader of a worker process, or the goroutine that ran the
// task in this process — takes the assignment with finish, tells the
// raylet (taskFinished) and delivers the result straight to its owner.
// clear (the worker was killed or died) takes the assignment away first,
// so exactly one of the two reports the attempt.
type Slot struct {
	mu      sync.Mutex
	current *Assignment
	// conn is the worker process's connection once it registered (nil
	// for goroutine workers and before the hello).
	conn *workerconn.Conn
	// unwatch stops forwarding the current task's cancellation.
	unwatch func() bool
	// killAt (ProcessConfig.KillAt) and kill, which SIGKILLs the
	// registered process, inject kill-worker faults.
	killAt func(KillPoint, *atollpb.TaskSpec) bool
	kill   func()
}

// assign hands t to the worker; a registered process gets it at once.
func (s *Slot) assign(t *Assignment) {
	s.mu.Lock()
	s.current = t
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		s.push(conn, t)
	}
}

// Registered records that the worker process said hello and sends it the
// task assigned meanwhile, if any; kill SIGKILLs the process.
func (s *Slot) Registered(conn *workerconn.Conn, kill func()) {
	s.mu.Lock()
	s.conn, s.kill = conn, kill
	t := s.current
	s.mu.Unlock()
	if t != nil {
		s.push(conn, t)
	}
}

// push sends t to the process, then forwards a cancellation of its
// context as a cancel frame (after the task, so the worker knows it).
func (s *Slot) push(conn *workerconn.Conn, t *Assignment) {
	if s.killedAt(BeforeExecute, t.spec) {
		return // the process's death reports the attempt
	}
	_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: t.spec}}})
	id := t.spec.TaskId
	stop := context.AfterFunc(t.ctx, func() {
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: id}}})
	})
	s.mu.Lock()
	if s.current == t {
		s.unwatch, stop = stop, nil
	}
	s.mu.Unlock()
	if stop != nil {
		stop() // it finished already
	}
}

// Finish takes the assignment res answers, or nil if res is not for the
// current attempt (late, or the worker was cleared) or a kill-worker
// fault killed the process at AfterExecute.
func (s *Slot) Finish(res *atollpb.TaskResult) *Assignment {
	s.mu.Lock()
	t := s.current
	if t == nil || string(t.spec.TaskId) != string(res.GetTaskId()) || t.spec.Attempt != res.GetAttempt() {
		s.mu.Unlock()
		return nil
	}
	if s.killAt != nil && s.kill != nil {
		s.mu.Unlock()
		if s.killedAt(AfterExecute, t.spec) {
			return nil // the process's death reports the attempt
		}
		s.mu.Lock()
		if s.current != t {
			s.mu.Unlock()
			return nil
		}
	}
	s.current = nil
	stop := s.unwatch
	s.unwatch = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	return t
}

// killedAt asks the slot's KillAt about spec at point and, if it says so,
// kills the process.
func (s *Slot) killedAt(point KillPoint, spec *atollpb.TaskSpec) bool {
	s.mu.Lock()
	killAt, kill := s.killAt, s.kill
	s.mu.Unlock()
	if killAt == nil || kill == nil || !killAt(point, spec) {
		return false
	}
	kill()
	return true
}

// clear takes the assignment away: the raylet reports the attempt itself.
// registered reports whether a worker process registered on the slot.
func (s *Slot) registered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

func (s *Slot) clear() {
	s.mu.Lock()
	s.current = nil
	stop := s.unwatch
	s.unwatch = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Report tells the raylet an attempt finished and delivers its result to
// the owner (the raylet does not answer the owner again).
func (t *Assignment) Report(system *actor.ActorSystem, raylet *actor.PID, res *atollpb.TaskResult) {
	system.Root.Send(raylet, &taskFinished{worker: t.worker, attemptID: t.attemptID, result: res, delivered: true})
	t.deliver(t.owner, res)
}
