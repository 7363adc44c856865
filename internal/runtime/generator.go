package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// The executing side of a streaming generator task (stream.go is the
// caller's). execute gives the attempt a Sink under its context; the
// function's yield stores each item as its own object (inline, or in the
// node's store under the id owner.GeneratorItemID(task, index), owned by
// the caller) and reports it to the owner at once, as a task_result frame
// with generator_item set (the raylet's connection reader hands it to
// the owner, see raylet/generator.go). The owner
// answers every report, and every item its caller takes, with a
// GeneratorAck: how many items were consumed, and how many it holds in
// order. A yield returns once fewer than the task's backpressure limit
// are unconsumed; held back, it sends again the reports the owner has not
// said it holds (resendAfter), since one may have been lost between nodes.

type sinkKey struct{}

// Sink is one attempt of a generator task as it runs: its function's
// yield stores and reports items through it.
type Sink struct {
	w     *Worker
	spec  *atollpb.TaskSpec
	task  ids.TaskID
	limit int64 // 0: no limit

	mu       sync.Mutex
	ended    bool          // the function returned: yield is refused
	next     int64         // items yielded so far
	consumed int64         // items the caller consumed, as the owner last said
	wake     chan struct{} // closed, and replaced, when consumed or received grows
	// received is how many items the owner holds in order, as it last
	// said; unreceived are the reports of the items from there on (with
	// a backpressure limit only: at most the limit), sent again while
	// the yield is held back (resendAfter).
	received   int64
	unreceived []*atollpb.TaskResult
}

// resendAfter is how long a yield held back by backpressure waits for
// the owner to say it received every item reported before it sends the
// missing ones' reports again (a report lost between nodes, or late),
// doubling up to maxResendAfter while nothing arrives.
const (
	resendAfter    = time.Second
	maxResendAfter = 30 * time.Second
)

// sinks are the generator attempts a runtime executes, by task: acks
// reach them here.
type sinks struct {
	mu sync.Mutex
	m  map[ids.TaskID]*Sink
}

func (s *sinks) add(g *Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[ids.TaskID]*Sink{}
	}
	s.m[g.task] = g
}

func (s *sinks) remove(g *Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[g.task] == g {
		delete(s.m, g.task)
	}
}

// ack applies a GeneratorAck to the attempt it names, if it runs in this
// process; it reports whether it does.
func (s *sinks) ack(task ids.TaskID, attempt int32, consumed, received int64) bool {
	s.mu.Lock()
	g := s.m[task]
	s.mu.Unlock()
	if g == nil || g.spec.Attempt != attempt {
		return false
	}
	g.mu.Lock()
	changed := false
	if received > g.received {
		g.received, changed = received, true
		for len(g.unreceived) > 0 && g.unreceived[0].GeneratorItem.GetIndex() < received {
			g.unreceived[0] = nil
			g.unreceived = g.unreceived[1:]
		}
	}
	if consumed > g.consumed {
		g.consumed, changed = consumed, true
	}
	if changed {
		close(g.wake)
		g.wake = make(chan struct{})
	}
	g.mu.Unlock()
	return true
}

// startGenerator registers the sink of a generator attempt under ctx; the
// returned function unregisters it when the attempt ends.
func (w *Worker) startGenerator(ctx context.Context, spec *atollpb.TaskSpec) (context.Context, *Sink, func()) {
	rt := w.Runtime
	g := &Sink{w: w, spec: spec, task: ids.MustFromBytes(spec.TaskId),
		limit: int64(spec.GeneratorBackpressure), wake: make(chan struct{})}
	if g.limit < 0 {
		g.limit = 0
	}
	rt.gens.add(g)
	return context.WithValue(ctx, sinkKey{}, g), g, func() {
		rt.gens.remove(g)
		g.mu.Lock()
		g.ended = true
		g.mu.Unlock()
	}
}

// SinkOf is the generator attempt running under ctx, or nil.
func SinkOf(ctx context.Context) *Sink {
	g, _ := ctx.Value(sinkKey{}).(*Sink)
	return g
}

// Count is the number of items yielded.
func (g *Sink) Count() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.next
}

// Yield stores and reports one item, then waits while the caller has
// the backpressure limit's worth of items unconsumed.
func (g *Sink) Yield(ctx context.Context, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	index, ended := g.next, g.ended
	g.mu.Unlock()
	if ended {
		return errs.Invalidf("generator %s: yield called after the function returned; call yield only from the generator function, before it returns", g.spec.Name)
	}
	if index >= owner.MaxGeneratorItems {
		return errs.Invalidf("generator %s yielded more than %d items: split the stream across several tasks", g.spec.Name, owner.MaxGeneratorItems)
	}
	item, transferred, err := g.w.storeItem(ctx, g.spec, index, v)
	if err != nil {
		return err
	}
	res := &atollpb.TaskResult{TaskId: g.spec.TaskId, Attempt: g.spec.Attempt, Returns: []*atollpb.ReturnObject{item},
		Transferred: transferred, WorkerId: g.w.workerID.Bytes(),
		GeneratorItem: &atollpb.GeneratorItem{Index: index}}
	g.mu.Lock()
	g.next++
	if g.limit > 0 {
		g.unreceived = append(g.unreceived, res)
	}
	g.mu.Unlock()
	if err := g.w.reportItem(res); err != nil {
		return err
	}
	wait := resendAfter
	for {
		g.mu.Lock()
		if g.limit == 0 || g.next-g.consumed < g.limit {
			g.mu.Unlock()
			return nil
		}
		wake, received := g.wake, g.received
		g.mu.Unlock()
		timedOut, err := g.waitAck(ctx, wake, wait)
		switch {
		case err != nil:
			return err
		case timedOut:
			if err := g.resend(received); err != nil {
				return err
			}
			wait = min(2*wait, maxResendAfter)
		default:
			wait = resendAfter
		}
	}
}

// waitAck waits until wake is closed (an ack said more were consumed or
// received), wait passes (timedOut), or ctx ends.
func (g *Sink) waitAck(ctx context.Context, wake <-chan struct{}, wait time.Duration) (timedOut bool, err error) {
	if rt := g.w.Runtime; rt.sim != nil {
		timeout := make(chan struct{})
		rt.after(wait, func() { close(timeout) })
		rt.park(func() bool { return isDone(wake) || isDone(timeout) || ctx.Err() != nil })
		select {
		case <-wake:
			return false, nil
		case <-timeout:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	g.w.srv.Conn().Handoff() // the acks come through the reader: if it runs this task, another must read
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-wake:
		return false, nil
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// resend sends again the reports of the items the owner has not said it
// received, if it said nothing more since received.
func (g *Sink) resend(received int64) error {
	g.mu.Lock()
	var again []*atollpb.TaskResult
	if g.received == received {
		again = slices.Clone(g.unreceived)
	}
	g.mu.Unlock()
	for _, res := range again {
		if err := g.w.reportItem(res); err != nil {
			return err
		}
	}
	return nil
}

// reportItem sends an item's report to the raylet: on the worker's
// connection, or through a simulator's link.
func (w *Worker) reportItem(res *atollpb.TaskResult) error {
	if w.sim != nil {
		return w.sim.link.ReportItem(res)
	}
	return w.client.ReportItem(res)
}

// storeItem encodes item index of a generator: inline if small, else in
// the object store under its own id, owned by the task's owner (as a
// task's return, see storeOutputs; each item travels in its own message).
// The objects this worker created that the item holds refs to are
// handed over to the owner with it (transferred), as with a task's
// return values (handOver).
func (w *Worker) storeItem(ctx context.Context, spec *atollpb.TaskSpec, index int64, v any) (item *atollpb.ReturnObject, transferred []*atollpb.ReturnObject, err error) {
	id := owner.GeneratorItemID(ids.MustFromBytes(spec.TaskId), index)
	enc, value, refs, err := encodeOutput(v, nil)
	if err != nil {
		return nil, nil, err
	}
	if len(refs) > 0 {
		if transferred, err = w.handOver(spec, refs, false); err != nil {
			return nil, nil, fmt.Errorf("generator %s, item %d: %w", spec.Name, index, err)
		}
	}
	inlined := 0
	if err := w.placeOutput(ctx, w.store, spec, id, enc, value, &inlined); err != nil {
		return nil, nil, err
	}
	return &atollpb.ReturnObject{ObjectId: id.Bytes(), Value: &value.val}, transferred, nil
}

// sendGeneratorAck passes an owner's GeneratorAck to the attempt it
// names: in this runtime, else through the raylet to the worker running
// it.
func (rt *Runtime) sendGeneratorAck(e owner.GeneratorAck) {
	if rt.gens.ack(e.Task, e.Attempt, e.Consumed, e.Received) || rt.closed.Load() {
		return
	}
	rt.link.generatorAck(&atollpb.GeneratorAck{TaskId: e.Task.Bytes(), Attempt: e.Attempt, Consumed: e.Consumed, Received: e.Received})
}
