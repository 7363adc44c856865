package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// CheckRef checks that h is a live ref of rt, argument i of op (-1: the
// only one).
func (rt *Runtime) CheckRef(h *Ref, op string, i int) error {
	switch {
	case h == nil:
		return errs.ZeroRef(op, i)
	case h.err != nil:
		return h.err
	case h.state.rt != rt:
		return errs.Invalidf("%s: %s (%s) comes from an atoll runtime that was shut down; refs do not outlive Shutdown, make it again after Init", op, refName(i), h.ID().Short())
	case h.state.released.Load():
		return errs.Invalidf("%s: %s (%s) was used after Release; keep a ref unreleased while you use it", op, refName(i), h.ID().Short())
	}
	return nil
}

// refName names the ref an error is about: refs[i] of a call that takes
// several, "the ref" (i < 0) of one that takes one. Only errors pay for
// the formatting: Wait checks every ref on every call.
func refName(i int) string {
	if i >= 0 {
		return fmt.Sprintf("refs[%d]", i)
	}
	return "the ref"
}

// Wait waits until numReady of the objects of hs have a value (or are
// unknown: Get reports why), ctx's deadline passes (no error) or ctx is
// cancelled (its error), and returns which are ready. With fetchLocal it
// then pulls the values of the first numReady ready ones that live on
// other nodes into this node's store.
func (rt *Runtime) Wait(ctx context.Context, hs []*Ref, numReady int, fetchLocal bool) ([]bool, error) {
	idl := make([]ids.ObjectID, len(hs))
	for i, h := range hs {
		idl[i] = h.ID()
	}
	isReady := make([]bool, len(hs))
	if err := rt.waitReady(ctx, idl, isReady, numReady); err != nil {
		return nil, err
	}
	if fetchLocal {
		var fetch []ids.ObjectID
		for i, id := range idl {
			if len(fetch) < numReady && isReady[i] {
				fetch = append(fetch, id)
			}
		}
		rt.fetchReady(ctx, fetch)
	}
	return isReady, nil
}

// waitReady marks in isReady the objects of idl that have a value (or
// are unknown) until numReady of them do, ctx's deadline passes (no
// error) or ctx is cancelled (its error).
func (rt *Runtime) waitReady(ctx context.Context, idl []ids.ObjectID, isReady []bool, numReady int) error {
	local := make([]bool, len(idl))
	for i := range local {
		local[i] = true
	}
	count := func() int { return rt.owner.readiness(idl, local, isReady) }
	if count() >= numReady {
		return nil
	}
	rt.wakeLone() // the results come through the connections' readers
	signal := make(chan struct{}, len(idl))
	w := &owner.Waiter{C: signal}
	rt.owner.do(func(t *owner.Table) {
		for _, id := range idl {
			t.Watch(id, w)
		}
	})
	defer rt.owner.do(func(t *owner.Table) { t.Unwatch(w) })
	defer rt.blocked(ctx)()
	for count() < numReady {
		rt.park(func() bool { return len(signal) > 0 || ctx.Err() != nil })
		select {
		case <-signal:
			for len(signal) > 0 { // count once for a burst of results
				<-signal
			}
		case <-ctx.Done():
			count()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil
			}
			return ctx.Err()
		}
	}
	return nil
}

// fetchReady pulls the stored values among idl that live on other nodes
// into this node's store. A failure is only logged: the Get that reads
// the object reports it (and has a lost object rebuilt).
func (rt *Runtime) fetchReady(ctx context.Context, idl []ids.ObjectID) {
	var fetch []ids.ObjectID
	var values []*atollpb.Value
	for _, id := range idl {
		v, _, _, ok := rt.owner.lookup(id)
		if ok && v != nil && v.GetStored() != nil && v.GetError() == nil && rt.isRemote(v) {
			fetch = append(fetch, id)
			values = append(values, v)
		}
	}
	if err := rt.fetchRemote(ctx, fetch, values); err != nil {
		rt.log.Debug("atoll: Wait could not fetch ready objects to this node; Get will retry", "objects", len(fetch), "err", err)
	}
}

// Cancel cancels the task that produces h (atoll.Cancel): recursively
// unless nonRecursive; with force, the worker process running it is
// killed too (refused for an actor call).
func (rt *Runtime) Cancel(h *Ref, force, nonRecursive bool) error {
	if h.ID().IsPut() {
		return nil
	}
	task := h.ID().TaskID()
	if force {
		state, ok := rt.owner.taskState(task)
		if ok && state.ActorCall {
			return errs.Invalidf("Cancel: ForceCancel of actor call %s (%s) would kill the actor; cancel it without ForceCancel, or Kill the actor", state.Name, task.Short())
		}
		rt.cancelTask(task, false)
		if ok && state.Dispatched {
			rt.link.killWorker(&atollpb.KillWorker{TaskId: task.Bytes(), Reason: "the task was force-cancelled (atoll.Cancel with ForceCancel)"})
		}
		return nil
	}
	rt.cancelTask(task, nonRecursive)
	return nil
}
