package runtime

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// ErrEndOfStream is what Stream.Next returns once the generator's task
// ended and every item was taken (atoll.ErrEndOfStream). It matches
// io.EOF.
var ErrEndOfStream = fmt.Errorf("atoll: end of the generator's stream: %w", io.EOF)

// Stream is the caller's end of a streaming generator task (the heap
// object behind atoll.ObjectRefGenerator): the refs to its items, in the
// order they were yielded, as they come. Items not taken live as long as
// the stream; the refs Next returned live as any ref does.
type Stream struct {
	rt   *Runtime
	task ids.TaskID
	name string // the task's name, for errors
	end  *Ref   // the task's return: the item count, or its error
	err  error  // the call could not be submitted
	st   *streamState
}

type streamState struct{ released atomic.Bool }

// generatorDropped tells the owner actor that a Stream was
// garbage-collected.
type generatorDropped struct{ task ids.TaskID }

// SubmitGenerator submits a generator task (spec.Generator set) and
// returns its stream; release is as for Submit.
func (rt *Runtime) SubmitGenerator(ctx context.Context, spec *atollpb.TaskSpec, args []ArgSource, release func()) *Stream {
	rt.wakeLone()
	var one [1]*Ref
	end := rt.Submit(ctx, one[:0], spec, args, release, nil)[0]
	s := &Stream{rt: rt, task: end.ID().TaskID(), name: spec.Name, end: end, st: &streamState{}}
	if rt.sim != nil {
		return s // no cleanup under a simulator (sim.go)
	}
	task, st := s.task, s.st
	goruntime.AddCleanup(s, func(rt *Runtime) {
		if st.released.CompareAndSwap(false, true) && !rt.closed.Load() {
			rt.post(&generatorDropped{task: task})
		}
	}, rt)
	return s
}

// FailedStream returns a stream whose every call fails with err.
func FailedStream(err error) *Stream { return &Stream{err: err, st: &streamState{}} }

// Next returns the ref to the next item, waiting for the task to yield
// it (atoll.ObjectRefGenerator.Next).
func (s *Stream) Next(ctx context.Context) (*Ref, error) {
	switch {
	case s.err != nil:
		return nil, s.err
	case s.st.released.Load():
		return nil, errs.Invalidf("ObjectRefGenerator used after Release: keep it until its stream is read")
	case s.rt.closed.Load():
		return nil, errs.ErrNotInitialized
	}
	rt := s.rt
	var unblock func()
	defer func() {
		if unblock != nil {
			unblock()
		}
	}()
	endID := s.end.ID()
	for {
		var item ids.ObjectID
		var ok, known, endKnown bool
		var changed, endDone <-chan struct{}
		var endValue *atollpb.Value
		var reported int
		rt.owner.do(func(t *owner.Table) {
			item, ok, changed, known = t.TakeGeneratorItem(s.task)
			if !ok {
				endValue, _, endDone, endKnown = t.Lookup(endID)
				reported, _ = t.GeneratorCounts(s.task)
			}
		})
		switch {
		case !known:
			return nil, errs.Invalidf("ObjectRefGenerator of task %s: its stream is gone (released, or atoll shut down)", s.task.Short())
		case ok:
			return rt.newRef(item), nil
		case !endKnown:
			return nil, &errs.ObjectLostError{ObjectID: endID.String(), Message: "the generator's end is gone (released?)"}
		case endValue != nil:
			return nil, generatorEnd(endValue, reported)
		}
		if unblock == nil {
			unblock = rt.blocked(ctx) // a task reading a stream lends its CPU
		}
		rt.park(func() bool { return isDone(changed) || isDone(endDone) || ctx.Err() != nil })
		select {
		case <-changed:
		case <-endDone:
		case <-ctx.Done():
			return nil, fmt.Errorf("atoll: waiting for the next item of generator %s (task %s): %w; Next may be called again to wait on",
				s.name, s.task.Short(), rt.ctxError(ctx, endID))
		}
	}
}

// generatorEnd is what Next returns once the task ended (end is its
// return) and its reported items were all taken.
func generatorEnd(end *atollpb.Value, reported int) error {
	if e := end.GetError(); e != nil {
		return errs.FromProto(e)
	}
	if end.GetStored() != nil {
		return ErrEndOfStream // a count stored, not inline (WithInlineThreshold(-1)): not checked
	}
	n, err := codec.Decode[int64](end.GetCodec(), end.GetInline())
	if err != nil {
		return fmt.Errorf("atoll: generator end: %w", err)
	}
	if n > int64(reported) {
		return &errs.ObjectLostError{ObjectID: "", Message: fmt.Sprintf(
			"the generator yielded %d items but only %d reached the caller: read it again by calling the function again", n, reported)}
	}
	return ErrEndOfStream
}

// Cancel cancels the generator's task.
func (s *Stream) Cancel() {
	if s.err == nil && !s.rt.closed.Load() {
		s.rt.cancelTask(s.task, false)
	}
}

// Release drops the stream now: the items not taken yet are freed, and
// the task is no longer held back by backpressure. Idempotent.
func (s *Stream) Release() {
	if s.err != nil || !s.st.released.CompareAndSwap(false, true) {
		return
	}
	if !s.rt.closed.Load() {
		s.rt.owner.do(func(t *owner.Table) { t.DropGenerator(s.task) })
	}
	s.end.Release()
}

// TaskID is the generator task's id ("" for a stream that failed to
// submit).
func (s *Stream) TaskID() string {
	if s.err != nil {
		return ""
	}
	return s.task.String()
}

// GeneratorCounts reports how many items the stream of task has had
// reported and how many its caller took.
func (rt *Runtime) GeneratorCounts(task ids.TaskID) (reported, taken int) {
	rt.owner.do(func(t *owner.Table) { reported, taken = t.GeneratorCounts(task) })
	return reported, taken
}
