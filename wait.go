package atoll

import (
	"context"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// ErrZeroRef: a zero ObjectRef (never assigned) or a nil Ref was passed
// where a reference is needed. It matches ErrInvalidArgument too.
var ErrZeroRef = errs.ErrZeroRef

// ErrShutDown: Shutdown stopped atoll in this process; call Init again.
// It also matches ErrNotInitialized and ErrUnavailable.
var ErrShutDown = errs.ErrShutDown

// WaitOption configures Wait.
type WaitOption func(*waitConfig)

type waitConfig struct {
	numReady   int
	numSet     bool
	fetchLocal bool
}

// NumReady makes Wait return once n refs are ready (Ray's num_returns).
// The default is 1, as in Ray; n must be between 1 and len(refs).
func NumReady(n int) WaitOption {
	return func(c *waitConfig) { c.numReady, c.numSet = n, true }
}

// FetchLocal says whether Wait pulls the values of the ready refs that
// live on other nodes into this node's object store before it returns
// (Ray's fetch_local; default true), so that a Get after it does not wait
// on the network. FetchLocal(false) only waits for the values to exist
// somewhere.
func FetchLocal(on bool) WaitOption {
	return func(c *waitConfig) { c.fetchLocal = on }
}

// Wait waits until NumReady of refs (default 1) are ready, that is have a
// value or an error, and returns the ready refs (at most NumReady, in
// input order) and the rest (in input order). It works on typed refs
// ([]ObjectRef[T], returning the same type) and on a mix of types
// ([]Ref).
//
// The context alone bounds the wait, as Ray's timeout does: when ctx's
// deadline passes, Wait returns the refs ready by then with a nil error
// (fewer than NumReady: that is how the timeout shows), and a context
// whose deadline has already passed makes Wait a poll. When ctx is
// cancelled, Wait returns ctx.Err(). A zero or released ref, or a ref
// from before Shutdown, fails the whole call (ErrZeroRef,
// ErrInvalidArgument).
func Wait[R Ref](ctx context.Context, refs []R, opts ...WaitOption) (ready, notReady []R, err error) {
	rt, err := running()
	if err != nil {
		return nil, refs, err
	}
	cfg := waitConfig{numReady: min(1, len(refs)), fetchLocal: true}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.numReady > len(refs) || cfg.numReady < 1 && len(refs) > 0 {
		return nil, refs, errs.Invalidf("Wait: NumReady(%d) out of range [1, %d] (the number of refs given)", cfg.numReady, len(refs))
	}
	idl := make([]ids.ObjectID, len(refs))
	for i, r := range refs {
		h, err := handleOf(rt, r, "Wait", i)
		if err != nil {
			return nil, refs, err
		}
		idl[i] = h.id
	}
	isReady := make([]bool, len(refs))
	if err := rt.waitReady(ctx, idl, isReady, cfg.numReady); err != nil {
		return nil, refs, err
	}
	var fetch []ids.ObjectID
	for i, r := range refs {
		if len(ready) < cfg.numReady && isReady[i] {
			ready = append(ready, r)
			fetch = append(fetch, idl[i])
		} else {
			notReady = append(notReady, r)
		}
	}
	if cfg.fetchLocal {
		rt.fetchReady(ctx, fetch)
	}
	return ready, notReady, nil
}

// handleOf checks that r is a live ref of rt (argument i of op) and
// returns its handle.
func handleOf(rt *core, r Ref, op string, i int) (*refHandle, error) {
	what := "the ref"
	if i >= 0 {
		what = fmt.Sprintf("refs[%d]", i)
	}
	if r == nil {
		return nil, errs.ZeroRef(op, i)
	}
	h := r.handle()
	switch {
	case h == nil:
		return nil, errs.ZeroRef(op, i)
	case h.err != nil:
		return nil, h.err
	case h.rt != rt:
		return nil, errs.Invalidf("%s: %s (%s) comes from an atoll runtime that was shut down; refs do not outlive Shutdown, make it again after Init", op, what, h.id.Short())
	case h.state.released.Load():
		return nil, errs.Invalidf("%s: %s (%s) was used after Release; keep a ref unreleased while you use it", op, what, h.id.Short())
	}
	return h, nil
}

// waitReady marks in isReady the objects of idl that have a value (or
// are unknown: Get reports why) until numReady of them do, ctx's deadline
// passes (no error) or ctx is cancelled (its error).
func (rt *core) waitReady(ctx context.Context, idl []ids.ObjectID, isReady []bool, numReady int) error {
	local := make([]bool, len(idl))
	for i := range local {
		local[i] = true
	}
	count := func() int { return rt.owner.readiness(idl, local, isReady) }
	if count() >= numReady {
		return nil
	}
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
func (rt *core) fetchReady(ctx context.Context, idl []ids.ObjectID) {
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
