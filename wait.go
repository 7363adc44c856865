package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/runtime"
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
	rt, err := runtime.Running(ctx)
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
	hs := make([]*runtime.Ref, len(refs))
	for i, r := range refs {
		if hs[i], err = handleOf(rt, r, "Wait", i); err != nil {
			return nil, refs, err
		}
	}
	isReady, err := rt.Wait(ctx, hs, cfg.numReady, cfg.fetchLocal)
	if err != nil {
		return nil, refs, err
	}
	for i, r := range refs {
		if len(ready) < cfg.numReady && isReady[i] {
			ready = append(ready, r)
		} else {
			notReady = append(notReady, r)
		}
	}
	return ready, notReady, nil
}

// handleOf checks that r is a live ref of rt (argument i of op, -1: the
// only one) and returns its handle.
func handleOf(rt *runtime.Runtime, r Ref, op string, i int) (*runtime.Ref, error) {
	if r == nil {
		return nil, errs.ZeroRef(op, i)
	}
	h := r.handle()
	if err := rt.CheckRef(h, op, i); err != nil {
		return nil, err
	}
	return h, nil
}

// CancelOption configures Cancel.
type CancelOption func(*cancelConfig)

type cancelConfig struct{ force, nonRecursive bool }

// ForceCancel makes Cancel kill the worker process running the task
// (Ray's force=True) instead of cancelling its context: for a task that
// does not watch its context. The task is not retried; Get on its results
// fails with a CancelledError. Actor calls cannot be force-cancelled (it
// would kill the actor): Cancel refuses with ErrInvalidArgument.
func ForceCancel() CancelOption { return func(c *cancelConfig) { c.force = true } }

// NonRecursive makes Cancel cancel the task alone (Ray's
// recursive=False): the tasks it submitted go on running and their refs
// stay valid. The task's context is cancelled with the cause
// ErrCancelNonRecursive (context.Cause tells it from a plain cancel);
// the SDK cancels a child task when its submitting context is cancelled
// with any other cause. It cannot be combined with ForceCancel: killing
// the worker process ends the tasks it owns with it.
func NonRecursive() CancelOption { return func(c *cancelConfig) { c.nonRecursive = true } }

// Cancel cancels the task that produces ref, as Ray's cancel does: a task
// not yet running never runs; a running one sees its context cancelled
// (or, with ForceCancel, its worker process killed). Get on its results
// then fails with a CancelledError (errors.Is(err, ErrCancelled)), also
// when the task returns normally once its context is cancelled: what it
// returns then is dropped.
//
// Cancelling is recursive, as Ray's default: the tasks a cancelled task
// submitted with its context (or one derived from it) are cancelled too,
// and theirs in turn; NonRecursive cancels the task alone. A call already sent to an actor runs to completion
// (actor calls not yet sent are cancelled). Cancelling a finished task or
// a Put object does nothing. ctx bounds nothing today (cancelling does
// not wait); it is there for the calls that will.
func Cancel(ctx context.Context, ref Ref, opts ...CancelOption) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	h, err := handleOf(rt, ref, "Cancel", -1)
	if err != nil {
		return err
	}
	var cfg cancelConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.force && cfg.nonRecursive {
		return errs.Invalidf("Cancel: ForceCancel kills the worker process, and with it every task it submitted, so it cannot be NonRecursive; drop one of the two options")
	}
	return rt.Cancel(h, cfg.force, cfg.nonRecursive)
}
