package atoll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// Streaming generators (Ray's generator tasks with num_returns="streaming"):
// a remote function that yields results as it goes. Each yielded item is
// stored as an object of its own, owned by the caller, as soon as it is
// yielded, so the caller can read item 0 while the task still runs.

// ErrEndOfStream is what ObjectRefGenerator.Next returns once the
// generator's task ended and every item was taken. It matches io.EOF
// (errors.Is(err, io.EOF)).
var ErrEndOfStream = fmt.Errorf("atoll: end of the generator's stream: %w", io.EOF)

// DefaultGeneratorBackpressure is how many items a generator task may
// have yielded that its caller has not taken with Next before its next
// yield waits (Ray's _generator_backpressure_num_objects).
const DefaultGeneratorBackpressure = 16

// GeneratorBackpressure sets how many yielded items a generator task may
// be ahead of its caller's Next: its yield waits past that many until the
// caller takes one. n < 0 turns backpressure off (the task runs to its end
// whatever the caller reads); 0 keeps DefaultGeneratorBackpressure. Only
// generator functions (NewGenFunc*) use it.
func GeneratorBackpressure(n int) TaskOnlyOption {
	return TaskOnlyOption{func(c *callConfig) { c.genBackpressure = n }}
}

// ObjectRefGenerator is the caller's end of a streaming generator task:
// the refs to its items, in the order they were yielded, as they come.
// Items the caller has not taken live as long as the generator does (it
// is garbage-collected, or Release is called); the refs Next returned
// live as any ObjectRef does.
//
// If the task's worker (or its node) dies, the task runs again (within
// MaxRetries) and its items are not duplicated: the new attempt's items
// with the indexes already delivered are ignored (a generator must yield
// the same items in the same order when run again, as Ray requires). A task error after
// k items ends the stream with that error after the k items; so does a
// cancellation (Cancel, or the context given to Remote).
type ObjectRefGenerator[R any] struct {
	rt   *core
	task ids.TaskID
	name string           // the task's name, for errors
	end  ObjectRef[int64] // the task's return: the item count, or its error
	err  error            // the call could not be submitted
	st   *genHandleState
}

type genHandleState struct{ released atomic.Bool }

// generatorDropped tells the owner actor that an ObjectRefGenerator was
// garbage-collected.
type generatorDropped struct{ task ids.TaskID }

func newGenerator[R any](rt *core, name string, end *refHandle) *ObjectRefGenerator[R] {
	g := &ObjectRefGenerator[R]{rt: rt, task: end.id.TaskID(), name: name, end: ObjectRef[int64]{h: end}, st: &genHandleState{}}
	task, st := g.task, g.st
	runtime.AddCleanup(g, func(rt *core) {
		if st.released.CompareAndSwap(false, true) && !rt.closed.Load() {
			rt.system.Root.Send(rt.ownerPID, &generatorDropped{task: task})
		}
	}, rt)
	return g
}

func failedGenerator[R any](err error) *ObjectRefGenerator[R] {
	return &ObjectRefGenerator[R]{err: err, st: &genHandleState{}}
}

// Next returns the ref to the next item, waiting for the task to yield
// it. Once the task ended and every item was taken it returns
// ErrEndOfStream, or the task's error (TaskError, WorkerCrashedError past
// its retries, CancelledError). ctx bounds the wait only: a Next that
// times out can be called again.
func (g *ObjectRefGenerator[R]) Next(ctx context.Context) (ObjectRef[R], error) {
	var zero ObjectRef[R]
	switch {
	case g.err != nil:
		return zero, g.err
	case g.st.released.Load():
		return zero, errs.Invalidf("ObjectRefGenerator used after Release: keep it until its stream is read")
	case g.rt.closed.Load():
		return zero, errs.ErrNotInitialized
	}
	rt := g.rt
	var unblock func()
	defer func() {
		if unblock != nil {
			unblock()
		}
	}()
	endID := g.end.h.id
	for {
		var item ids.ObjectID
		var ok, known, endKnown bool
		var changed, endDone <-chan struct{}
		var endValue *atollpb.Value
		var reported int
		rt.owner.do(func(t *owner.Table) {
			item, ok, changed, known = t.TakeGeneratorItem(g.task)
			if !ok {
				endValue, _, endDone, endKnown = t.Lookup(endID)
				reported, _ = t.GeneratorCounts(g.task)
			}
		})
		switch {
		case !known:
			return zero, errs.Invalidf("ObjectRefGenerator of task %s: its stream is gone (released, or atoll shut down)", g.task.Short())
		case ok:
			return ObjectRef[R]{h: newHandle(rt, item)}, nil
		case !endKnown:
			return zero, &errs.ObjectLostError{ObjectID: endID.String(), Message: "the generator's end is gone (released?)"}
		case endValue != nil:
			return zero, generatorEnd(endValue, reported)
		}
		if unblock == nil {
			unblock = rt.blocked(ctx) // a task reading a stream lends its CPU
		}
		select {
		case <-changed:
		case <-endDone:
		case <-ctx.Done():
			return zero, fmt.Errorf("atoll: waiting for the next item of generator %s (task %s): %w; Next may be called again to wait on",
				g.name, g.task.Short(), g.rt.ctxError(ctx, endID))
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

// All iterates over the items' refs until the end of the stream; an
// error (the task's, or ctx's) is the last pair it yields.
//
//	for ref, err := range gen.All(ctx) {
//		if err != nil { ... }
//		v, err := atoll.Get(ctx, ref)
//	}
func (g *ObjectRefGenerator[R]) All(ctx context.Context) iter.Seq2[ObjectRef[R], error] {
	return func(yield func(ObjectRef[R], error) bool) {
		for {
			ref, err := g.Next(ctx)
			if errors.Is(err, ErrEndOfStream) {
				return
			}
			if !yield(ref, err) || err != nil {
				return
			}
		}
	}
}

// Cancel cancels the generator's task: a running task's context is
// cancelled (its yield returns the context's error), and the stream ends
// with CancelledError after the items it yielded before.
func (g *ObjectRefGenerator[R]) Cancel() {
	if g.err == nil && !g.rt.closed.Load() {
		g.rt.cancelTask(g.task, false)
	}
}

// Release drops the stream now instead of waiting for the garbage
// collector: the items not taken yet are freed, and the task, if it still
// runs, is no longer held back by backpressure (its later items are freed
// as they come). Refs Next returned stay valid. Idempotent.
func (g *ObjectRefGenerator[R]) Release() {
	if g.err != nil || !g.st.released.CompareAndSwap(false, true) {
		return
	}
	if !g.rt.closed.Load() {
		g.rt.owner.do(func(t *owner.Table) { t.DropGenerator(g.task) })
	}
	g.end.Release()
}

// TaskID returns the generator task's id in hex.
func (g *ObjectRefGenerator[R]) TaskID() string {
	if g.err != nil {
		return ""
	}
	return g.task.String()
}

// callGenerator submits a generator task and returns its stream.
func callGenerator[R any](ctx context.Context, name string, bound, opts []TaskOption, args ...argSource) *ObjectRefGenerator[R] {
	rt, err := running()
	if err != nil {
		return failedGenerator[R](err)
	}
	cc := taskConfig(bound, opts)
	if err := checkRetries(cc); err != nil {
		return failedGenerator[R](err)
	}
	limit := cc.genBackpressure
	switch {
	case limit == 0:
		limit = DefaultGeneratorBackpressure
	case limit < 0:
		limit = 0 // no limit
	}
	spec := &atollpb.TaskSpec{
		Type: atollpb.TaskType_NORMAL_TASK, Function: name, Name: cc.name, NumReturns: 1,
		MaxRetries: int32(cc.maxRetries), RetryExceptions: cc.retryExceptions,
		Generator: true, GeneratorBackpressure: int32(limit),
	}
	// Placed like any task: on another node of a cluster, its items and
	// acks cross the gateways (cluster/generators.go).
	spec.Scheduling = cc.scheduling
	if cc.resources != nil {
		spec.Resources = cc.resources.toMap()
	} else {
		spec.Resources = map[string]float64{"CPU": 1}
	}
	end := rt.submit(ctx, spec, args, cc, nil)[0]
	return newGenerator[R](rt, spec.Name, end)
}

// genInvoker is the invoker of a generator function: run calls it with
// the attempt's yield; the task's return is the number of items.
func genInvoker[R any](name string, run func(ctx context.Context, args []argData, yield func(R) error) error) invoker {
	return func(ctx context.Context, args []argData) ([]any, error) {
		g := sinkFrom(ctx)
		if g == nil {
			return nil, errs.Invalidf("%s is a generator function: call it with its GenFunc's Remote", name)
		}
		err := run(ctx, args, func(r R) error { return g.yield(ctx, r) })
		return []any{g.count()}, err
	}
}
