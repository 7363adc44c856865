package atoll

import (
	"context"
	"errors"
	"iter"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// Streaming generators (Ray's generator tasks with num_returns="streaming"):
// a remote function that yields results as it goes. Each yielded item is
// stored as an object of its own, owned by the caller, as soon as it is
// yielded, so the caller can read item 0 while the task still runs.

// ErrEndOfStream is what ObjectRefGenerator.Next returns once the
// generator's task ended and every item was taken. It matches io.EOF
// (errors.Is(err, io.EOF)).
var ErrEndOfStream = runtime.ErrEndOfStream

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
	s *runtime.Stream
}

// Next returns the ref to the next item, waiting for the task to yield
// it. Once the task ended and every item was taken it returns
// ErrEndOfStream, or the task's error (TaskError, WorkerCrashedError past
// its retries, CancelledError). ctx bounds the wait only: a Next that
// times out can be called again.
func (g *ObjectRefGenerator[R]) Next(ctx context.Context) (ObjectRef[R], error) {
	h, err := g.s.Next(ctx)
	if err != nil {
		return ObjectRef[R]{}, err
	}
	return ObjectRef[R]{h: h}, nil
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
func (g *ObjectRefGenerator[R]) Cancel() { g.s.Cancel() }

// Release drops the stream now instead of waiting for the garbage
// collector: the items not taken yet are freed, and the task, if it still
// runs, is no longer held back by backpressure (its later items are freed
// as they come). Refs Next returned stay valid. Idempotent.
func (g *ObjectRefGenerator[R]) Release() { g.s.Release() }

// TaskID returns the generator task's id in hex.
func (g *ObjectRefGenerator[R]) TaskID() string { return g.s.TaskID() }

// callGenerator submits a generator task and returns its stream.
func callGenerator[R any](ctx context.Context, name string, bound, opts []TaskOption, args ...runtime.ArgSource) *ObjectRefGenerator[R] {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return &ObjectRefGenerator[R]{s: runtime.FailedStream(err)}
	}
	cc := taskConfig(bound, opts)
	if err := checkRetries(&cc); err != nil {
		return &ObjectRefGenerator[R]{s: runtime.FailedStream(err)}
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
		MaxRetries: int32(cc.maxRetries), RetryExceptions: cc.retryExceptions, RetryErrors: cc.retryErrors,
		Generator: true, GeneratorBackpressure: int32(limit),
	}
	// Placed like any task: on another node of a cluster, its items and
	// acks cross the gateways (cluster/generators.go).
	spec.Scheduling = cc.scheduling
	if cc.resources != nil {
		spec.Resources = cc.resources.toMap()
	} else {
		spec.Resources = oneCPU
	}
	if err := cc.checkGroup(spec.Resources); err != nil {
		return &ObjectRefGenerator[R]{s: runtime.FailedStream(err)}
	}
	return &ObjectRefGenerator[R]{s: rt.SubmitGenerator(ctx, spec, args, cc.release)}
}

// genInvoker is the invoker of a generator function: run calls it with
// the attempt's yield; the task's return is the number of items.
func genInvoker[R any](name string, run func(ctx context.Context, args []registry.Arg, yield func(R) error) error) registry.Invoker {
	return func(ctx context.Context, args []registry.Arg, out []any) ([]any, error) {
		g := runtime.SinkOf(ctx)
		if g == nil {
			return nil, errs.Invalidf("%s is a generator function: call it with its GenFunc's Remote", name)
		}
		err := run(ctx, args, func(r R) error { return g.Yield(ctx, r) })
		return append(out, g.Count()), err
	}
}
