package raylet

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Slot is where the raylet hands task attempts to a worker and where the
// worker hands the results back, without a mailbox hop on either side:
// the raylet assigns on its own goroutine (a process worker's PushTask
// frame is written from there), and whoever produces a result — the
// connection reader of a worker process, or the goroutine that ran the
// task in this process — takes its assignment with Finish, tells the
// raylet (taskFinished) and delivers the result straight to its owner.
// clear (the worker was killed or died) takes the assignments away first,
// so exactly one of the two reports each attempt.
//
// A process worker holds up to the raylet's pipeline depth of attempts at
// once (pipelining): it runs them one after another in the order they
// were pushed, so the next one starts with no round trip to the raylet.
// recall takes back one the process has not started.
type Slot struct {
	mu sync.Mutex
	// inflight holds the attempts pushed to the worker and not finished,
	// in push order.
	inflight []*Assignment
	// last is the latest attempt finished: output the process writes after
	// its result came back is still that task's (Current, output.go).
	last *atollpb.TaskSpec
	// conn is the worker process's connection once it registered (nil
	// before the hello).
	conn *workerconn.Conn
	// early are frames queued before the worker registered (the cancels
	// of tasks pushed to it meanwhile), sent after those tasks when it
	// does; at most maxEarlyFrames.
	early []*atollpb.Frame
	// killAt (ProcessConfig.KillAt) and kill, which SIGKILLs the
	// registered worker (or closes an in-process one's connection),
	// inject kill-worker faults.
	killAt func(KillPoint, *atollpb.TaskSpec) bool
	kill   func()
	// holder and lease: the submitter the worker is leased to, and the
	// lease (zero: none): only that lease's direct pushes are taken.
	holder *Submitter
	lease  uint64
	// lone: the last push to the worker was a lone task (pushDirect)
	// whose pusher may read its result (lazy reading, quietNow).
	lone bool
}

// assign hands ts to the worker, in order; a registered process gets them
// at once, in one write.
func (s *Slot) assign(ts ...*Assignment) {
	s.mu.Lock()
	s.lone = false
	s.inflight = append(s.inflight, ts...)
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		s.push(conn, ts)
	}
}

// Registered records that the worker process said hello and sends it the
// tasks assigned meanwhile, if any; kill SIGKILLs the process.
func (s *Slot) Registered(conn *workerconn.Conn, kill func()) {
	s.mu.Lock()
	s.conn, s.kill = conn, kill
	conn.SetQuiet(s.quietNow)
	waiting := append([]*Assignment(nil), s.inflight...)
	early := s.early
	s.early = nil
	s.mu.Unlock()
	if len(waiting) > 0 {
		s.push(conn, waiting)
	}
	if len(early) > 0 {
		_ = conn.Queue(early...)
	}
}

// maxEarlyFrames bounds the frames a slot keeps for a worker that has not
// registered: a submitter cancels each task it pushed at most once, and
// pushes a lease's pipeline depth at a time.
const maxEarlyFrames = 1024

// push sends ts to the process, then forwards a cancellation of each one's
// context as a cancel frame (after the task, so the worker knows it). A
// submitter's attempts have no context: it cancels them itself.
func (s *Slot) push(conn *workerconn.Conn, ts []*Assignment) {
	frames := make([]*atollpb.Frame, 0, len(ts))
	sent := ts[:0:0]
	for _, t := range ts {
		spec := t.Spec()
		if s.killedAt(BeforeExecute, spec) {
			break // the process's death reports the attempts
		}
		frames = append(frames, &atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: spec}}})
		sent = append(sent, t)
	}
	if len(frames) == 0 {
		return
	}
	_ = conn.SendAll(frames...)
	conn.Wake()
	for _, t := range sent {
		if t.ctx == nil {
			continue
		}
		id, tctx := t.task.Bytes(), t.ctx
		stop := context.AfterFunc(tctx, func() {
			nonRecursive := errors.Is(context.Cause(tctx), errs.ErrCancelNonRecursive)
			_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: id, NonRecursive: nonRecursive}}})
		})
		s.mu.Lock()
		if s.holds(t) {
			t.unwatch, stop = stop, nil
		}
		s.mu.Unlock()
		if stop != nil {
			stop() // it finished already
		}
	}
}

// leaseTo records that the worker is leased to holder as lease id (zero:
// the lease ended; pushes for it are refused from now on).
func (s *Slot) leaseTo(holder *Submitter, id uint64) {
	s.mu.Lock()
	s.holder, s.lease = holder, id
	conn := s.conn
	s.mu.Unlock()
	if conn != nil && id == 0 {
		conn.Wake()
	}
}

// quietNow reports whether the connection's reader may pause (lazy
// reading): the worker is leased, holds no attempt, and the last push
// was a lone task, as a goroutine running tasks one at a time pushes
// them. After pipelined pushes the reader keeps reading.
func (s *Slot) quietNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease != 0 && len(s.inflight) == 0 && s.lone
}

// endLease ends lease id if it is the slot's.
func (s *Slot) endLease(id uint64) {
	s.mu.Lock()
	if s.lease == id {
		s.holder, s.lease = nil, 0
	}
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.Wake()
	}
}

// pushDirect hands a submitter's attempts of lease to the worker, in
// order: enc (which encodes their push frames) is written with wait as
// Conn.Encode does, or they are sent when the process registers. It
// returns false if the lease is not the slot's any more (its worker died):
// the caller reports the attempts, which the slot did not take.
func (s *Slot) pushDirect(lease uint64, ts []*Assignment, enc *PushEncoder, wait bool) bool {
	s.mu.Lock()
	if s.lease != lease || lease == 0 {
		s.mu.Unlock()
		return false
	}
	holder := s.holder
	lone := wait && len(ts) == 1 && len(s.inflight) == 0 && holder != nil && holder.cfg.Lone != nil
	s.lone = lone
	s.inflight = append(s.inflight, ts...)
	conn, killAt := s.conn, s.killAt != nil && s.kill != nil
	s.mu.Unlock()
	if conn == nil {
		return true // Registered sends them
	}
	enc.Reset()
	for _, t := range ts {
		if killAt && s.killedAt(BeforeExecute, t.Spec()) {
			break // the process's death reports the attempts
		}
		if t.packed != nil {
			enc.AddPacked(t.packed)
		} else {
			enc.Add(t.spec)
		}
	}
	if enc.Len() > 0 {
		_ = conn.Encode(enc, wait)
	}
	enc.Reset()
	if lone {
		// A lone task pushed by a goroutine that may wait for it: it
		// reads the result itself if it does (Lone.Await); anything else
		// its owner does next wakes the reader (Lone.Wake).
		holder.cfg.Lone.Hold(conn, ts[0].task)
	} else {
		conn.Wake()
	}
	return true
}

// takeLease takes the attempts of lease away (its worker died): the
// caller reports them.
func (s *Slot) takeLease(lease uint64) []*Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Assignment
	kept := s.inflight[:0]
	for _, t := range s.inflight {
		if t.direct != nil && t.lease == lease {
			out = append(out, t)
			continue
		}
		kept = append(kept, t)
	}
	clear(s.inflight[len(kept):])
	s.inflight = kept
	if s.lease == lease {
		s.holder, s.lease = nil, 0
	}
	return out
}

// queue writes f to the process without waiting (Conn.Queue), or keeps it
// until the process registers (after the tasks pushed to it meanwhile: a
// cancel reaches the worker after the task it cancels).
func (s *Slot) queue(f *atollpb.Frame) {
	s.mu.Lock()
	conn := s.conn
	if conn == nil && len(s.early) < maxEarlyFrames {
		s.early = append(s.early, f) // sent after the pushes once it registers
	}
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Queue(f)
		conn.Wake()
	}
}

// holds reports whether t is in flight; s.mu is held.
func (s *Slot) holds(t *Assignment) bool {
	for _, x := range s.inflight {
		if x == t {
			return true
		}
	}
	return false
}

// take removes the in-flight attempt for taskID and attempt and returns
// it with the function that stops watching its context (call it once
// s.mu is released), or nil; s.mu is held.
func (s *Slot) take(taskID []byte, attempt int32) (*Assignment, func() bool) {
	i := s.index(taskID, attempt)
	if i < 0 {
		return nil, nil
	}
	t := s.inflight[i]
	// Delete clears the slot the tail left: a stale pointer there would
	// keep the assignment's run (package slab) and what it points to.
	s.inflight = slices.Delete(s.inflight, i, i+1)
	stop := t.unwatch
	t.unwatch = nil
	return t, stop
}

// index returns the position of the in-flight attempt for taskID and
// attempt, or -1; s.mu is held.
func (s *Slot) index(taskID []byte, attempt int32) int {
	return slices.IndexFunc(s.inflight, func(t *Assignment) bool {
		return t.is(taskID, attempt)
	})
}

func stopWatch(stop func() bool) {
	if stop != nil {
		stop()
	}
}

// Finish takes the assignment res answers, or nil if res is not for an
// attempt in flight (late, or the worker was cleared) or a kill-worker
// fault killed the process at AfterExecute.
func (s *Slot) Finish(res *atollpb.TaskResult) *Assignment {
	s.mu.Lock()
	i := s.index(res.GetTaskId(), res.GetAttempt())
	if i < 0 {
		s.mu.Unlock()
		return nil
	}
	t := s.inflight[i]
	if s.killAt != nil && s.kill != nil {
		s.mu.Unlock()
		if s.killedAt(AfterExecute, t.Spec()) {
			return nil // the process's death reports the attempt
		}
		s.mu.Lock()
	}
	t, stop := s.take(res.GetTaskId(), res.GetAttempt())
	if t != nil {
		s.last = t.common()
	}
	s.mu.Unlock()
	stopWatch(stop)
	return t
}

// recallTimeout bounds a recall's round trip; a worker that does not
// answer in time keeps the task (it runs it, or its death reports it).
const recallTimeout = 10 * time.Second

// recall asks the process to give t back unstarted, on a goroutine of its
// own; done(true) runs once the process gave it up (it will never run
// it, and the slot no longer holds it), done(false) if it started it or
// could not be asked.
func (s *Slot) recall(t *Assignment, done func(recalled bool)) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		done(false)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), recallTimeout)
		defer cancel()
		reply, err := conn.Call(ctx, &atollpb.Frame{Body: &atollpb.Frame_RecallTask{RecallTask: &atollpb.RecallTask{TaskId: t.task.Bytes(), Attempt: t.attempt()}}})
		recalled := err == nil && reply.GetRecallReply().GetRecalled()
		if recalled {
			s.mu.Lock()
			taken, stop := s.take(t.task.Bytes(), t.attempt())
			s.mu.Unlock()
			stopWatch(stop)
			recalled = taken == t
		}
		done(recalled)
	}()
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

// registered reports whether a worker process registered on the slot.
func (s *Slot) registered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// clear takes every assignment away: the raylet reports its own
// attempts itself; a submitter's left (a death its LeaseLost did not
// see, which cannot happen but must not lose them) are returned for the
// caller to report.
func (s *Slot) clear() []*Assignment {
	s.mu.Lock()
	var stops []func() bool
	var direct []*Assignment
	for _, t := range s.inflight {
		if t.direct != nil {
			direct = append(direct, t)
			continue
		}
		stops = append(stops, t.unwatch)
		t.unwatch = nil
	}
	s.inflight, s.early = nil, nil
	s.holder, s.lease = nil, 0
	s.mu.Unlock()
	for _, stop := range stops {
		stopWatch(stop)
	}
	return direct
}

// Report tells the raylet an attempt finished and delivers its result to
// the owner (the raylet does not answer the owner again). A submitter's
// attempt is its submitter's to report.
func (t *Assignment) Report(system *actor.ActorSystem, raylet *actor.PID, res *atollpb.TaskResult) {
	if t.direct != nil {
		t.direct.finished(t, res)
		return
	}
	system.Root.Send(raylet, &taskFinished{worker: t.worker, attemptID: t.attemptID, result: res, delivered: true})
	t.deliver(t.owner, res)
}
