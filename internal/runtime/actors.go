package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/slab"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

// Actor is what a process's handles to an actor know of it (the heap
// object behind atoll.ActorHandle). The caller side of the actor (its
// address, its death, the calls waiting to be sent in order) is the owner
// table's.
type Actor struct {
	ID             ids.ActorID
	Name           string
	TypeName       string
	MaxTaskRetries int
	// pending bounds this process's calls in flight (MaxPendingCalls).
	pending pendingCalls
	// park is its runtime's (sim.go).
	park func(ready func() bool)
	// idBytes is ID's bytes, shared read-only by the specs of its calls.
	idBytes []byte
	// function is the spec function of the method last called
	// (Function): most handles call one method, or a few in turn.
	function atomic.Pointer[methodFunction]
	// specs makes its calls' specs (CallSpec), under specMu.
	specMu sync.Mutex
	specs  slab.Of[specpack.SpecWithID]
}

// CallSpec returns an empty spec for a call, with room for its task id.
// A call's spec lives from its submission to its answer, as the calls'
// made about when it was do: they come a run at a time (package slab).
func (a *Actor) CallSpec() *atollpb.TaskSpec {
	a.specMu.Lock()
	s := a.specs.New()
	a.specMu.Unlock()
	return s.Spec()
}

// methodFunction is a method's name and its spec function.
type methodFunction struct{ method, function string }

// IDBytes is the actor's id as a call's spec holds it (shared: read-only).
func (a *Actor) IDBytes() []byte { return a.idBytes }

// Function is the spec function of a call of method
// (registry.MethodName), made once for a run of calls of one method.
func (a *Actor) Function(method string) string {
	if f := a.function.Load(); f != nil && f.method == method {
		return f.function
	}
	f := &methodFunction{method: method, function: registry.MethodName(a.TypeName, method)}
	a.function.Store(f)
	return f.function
}

// NewActor registers a handle to actor id with the owner table (owned:
// this process created it and kills it when its job ends); the table
// forgets the handle when the garbage collector finds it unreachable (the
// cleanup only posts a message). maxPending > 0 bounds the calls this
// process has pending on it (MaxPendingCalls).
func (rt *Runtime) NewActor(id ids.ActorID, name, typeName string, maxTaskRetries, maxPending int, owned bool) *Actor {
	a := &Actor{ID: id, Name: name, TypeName: typeName, MaxTaskRetries: maxTaskRetries, park: rt.park, idBytes: id.Bytes()}
	if maxPending > 0 {
		a.pending = make(pendingCalls, maxPending)
	}
	rt.owner.do(func(t *owner.Table) { t.AddActor(id, name, owned) })
	if rt.sim != nil {
		return a // no cleanup under a simulator (sim.go): the handle lives with its process
	}
	goruntime.AddCleanup(a, func(rt *Runtime) {
		if !rt.closed.Load() {
			rt.post(&actorHandleDropped{id: id})
		}
	}, rt)
	return a
}

// actorHandleDropped is posted to the owner actor when a handle is
// garbage.
type actorHandleDropped struct{ id ids.ActorID }

// AcquireCall waits for room for one more call under the actor's
// MaxPendingCalls, or ctx's end; release frees it (nil: no bound).
func (a *Actor) AcquireCall(ctx context.Context) (release func(), err error) {
	if a.pending == nil {
		return nil, nil
	}
	if err := a.pending.acquire(ctx, a.park); err != nil {
		return nil, err
	}
	return a.pending.release, nil
}

// pendingCalls bounds a handle's calls in flight (MaxPendingCalls).
type pendingCalls chan struct{}

// acquire waits for room for one more call, or ctx's end.
func (p pendingCalls) acquire(ctx context.Context, park func(ready func() bool)) error {
	select {
	case p <- struct{}{}:
		return nil
	default:
	}
	park(func() bool { return len(p) < cap(p) || ctx.Err() != nil })
	select {
	case p <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for room under the actor's MaxPendingCalls (%d): %w", cap(p), ctx.Err())
	}
}

func (p pendingCalls) release() { <-p }

// RegisterActor registers a new actor with the GCS (refused if its name
// is taken).
func (rt *Runtime) RegisterActor(ctx context.Context, info *atollpb.ActorInfo) error {
	return rt.gcs.RegisterActor(ctx, info)
}

// GetNamedActor asks the GCS for the live actor named name in the
// runtime's namespace.
func (rt *Runtime) GetNamedActor(ctx context.Context, name string) (*atollpb.ActorInfo, error) {
	return rt.gcs.GetNamedActor(ctx, rt.settings.Namespace, name)
}

// ActorEvent applies what the GCS said of an actor to the owner table.
func (rt *Runtime) ActorEvent(info *atollpb.ActorInfo) {
	rt.owner.do(func(t *owner.Table) { t.ActorEvent(info) })
}

// KillActor stops an actor for good (atoll.Kill): this process's calls
// not yet finished fail at once.
func (rt *Runtime) KillActor(a *Actor) {
	const reason = "killed by atoll.Kill"
	rt.owner.do(func(t *owner.Table) { t.ActorKilled(a.ID, reason) })
	rt.link.killActor(&atollpb.KillActor{ActorId: a.ID.Bytes(), NoRestart: true, Reason: reason})
}

// CrashActor makes an actor crash as if its worker died: it restarts
// within its MaxRestarts.
func (rt *Runtime) CrashActor(id ids.ActorID) {
	rt.link.killActor(&atollpb.KillActor{ActorId: id.Bytes(), NoRestart: false, Reason: "crashed by fault injection"})
}

// KillWorker kills a worker: the one with workerID, or else the one
// running the task that makes the object task.
func (rt *Runtime) KillWorker(workerID ids.WorkerID, task ids.TaskID) {
	m := &atollpb.KillWorker{Reason: "killed by fault injection"}
	if !workerID.IsZero() {
		m.WorkerId = workerID.Bytes()
	} else {
		m.TaskId = task.Bytes()
	}
	rt.link.killWorker(m)
}

// LocateActor asks the GCS where actor id lives, for a handle this
// process received or when the owner table asks (owner.LocateActor: a
// call to it was lost on its way); it does not wait.
func (rt *Runtime) LocateActor(id ids.ActorID) {
	if rt.sim != nil {
		rt.sim.env.Go("locate actor "+id.Short(), func() { rt.locateOnce(id) })
		return
	}
	go rt.locateActor(id)
}

// locateActor asks the GCS where actor id lives: for a handle this
// process received, since actor events only tell of changes and the
// actor may have started before this process heard of it; for an actor
// whose call was lost on its way, since the address the table forgot may
// still be right (no event would come) or the event that moved it was
// missed (events are best effort). An actor the GCS does not know (or
// knows dead) fails the handle's calls with ActorDiedError. Past its
// tries the table hears that the lookup gave up (LocateFailed): calls
// waiting for its answer go to the address the table forgot, if any.
func (rt *Runtime) locateActor(id ids.ActorID) {
	_, err := backoff.Retry(context.Background(), func() (struct{}, error) {
		if rt.closed.Load() {
			return struct{}{}, backoff.Permanent(errs.ErrShutDown)
		}
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		info, err := rt.gcs.GetActor(c, id.Bytes())
		return struct{}{}, rt.located(id, info, err)
	}, backoff.WithBackOff(&backoff.ExponentialBackOff{
		InitialInterval: 50 * time.Millisecond, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: 2 * time.Second,
	}), backoff.WithMaxTries(6))
	if err != nil && !rt.closed.Load() {
		rt.owner.do(func(t *owner.Table) { t.LocateFailed(id) })
	}
}

// located applies the GCS's answer about an actor (the table ignores an
// answer older than what it knows); an error means ask again.
func (rt *Runtime) located(id ids.ActorID, info *atollpb.ActorInfo, err error) error {
	switch {
	case err == nil && info != nil:
		// Pending: its ALIVE event comes. Restarting with no address (its
		// node died): its owner sends the creation again, if the event
		// that said so was missed.
		rt.owner.do(func(t *owner.Table) { t.ActorLocated(info) })
		return nil
	case errors.Is(err, errs.ErrNotFound):
		rt.log.Warn("an ActorHandle names an actor the GCS does not know", "actor", id.String())
		rt.owner.do(func(t *owner.Table) {
			t.ActorKilled(id, "the GCS does not know this actor (forgotten after its death, or its handle was passed from a process of another job or cluster?)")
		})
		return nil
	case err == nil:
		err = errs.Unavailablef("the GCS returned no actor %s", id)
	}
	rt.log.Debug("locating an actor", "actor", id.String(), "err", err)
	return err
}

// locateOnce is locateActor in a simulated process: the simulator's GCS
// client retries and times out in simulated time; past its tries the
// table hears that the lookup gave up, as past locateActor's.
func (rt *Runtime) locateOnce(id ids.ActorID) {
	if rt.closed.Load() {
		return
	}
	info, err := rt.gcs.GetActor(context.Background(), id.Bytes())
	if rt.located(id, info, err) != nil && !rt.closed.Load() {
		rt.owner.do(func(t *owner.Table) { t.LocateFailed(id) })
	}
}
