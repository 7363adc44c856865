package atoll

import (
	"sync"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// actorState is the caller side of one actor: where it lives, whether it
// is dead, and the calls waiting to be sent in order.
type actorState struct {
	id             ids.ActorID
	name           string
	typeName       string
	maxTaskRetries int
	owned          bool // this process created it (it dies with the job)

	mu       sync.Mutex
	address  string // where the host takes calls; empty until created
	dead     *atollpb.ErrorInfo
	queue    []*pendingTask // submitted, not yet sent, in call order
	inflight map[ids.TaskID]*pendingTask
}

// actorTable holds the actors this process has handles to.
type actorTable struct {
	mu sync.Mutex
	m  map[ids.ActorID]*actorState
}

func newActorTable() *actorTable { return &actorTable{m: map[ids.ActorID]*actorState{}} }

// ownedLive lists the actors this process created that are not known dead.
func (t *actorTable) ownedLive() []ids.ActorID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []ids.ActorID
	for id, st := range t.m {
		st.mu.Lock()
		dead := st.dead != nil
		st.mu.Unlock()
		if st.owned && !dead {
			out = append(out, id)
		}
	}
	return out
}

func (t *actorTable) add(id ids.ActorID, name, typeName string, maxTaskRetries int) *actorState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.m[id]; st != nil {
		return st
	}
	st := &actorState{id: id, name: name, typeName: typeName, maxTaskRetries: maxTaskRetries, inflight: map[ids.TaskID]*pendingTask{}}
	t.m[id] = st
	return st
}

func (t *actorTable) get(id ids.ActorID) *actorState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// created records where a started actor lives and sends the calls that
// waited for it.
func (t *actorTable) created(rt *core, id ids.ActorID, address string) {
	st := t.get(id)
	if st == nil || address == "" {
		return
	}
	st.mu.Lock()
	if st.address == "" {
		st.address = address
	}
	st.mu.Unlock()
	st.flush(rt)
}

// died fails every pending call of a dead actor and any later one.
func (t *actorTable) died(rt *core, id ids.ActorID, cause *atollpb.ErrorInfo) {
	st := t.get(id)
	if st == nil {
		return
	}
	if cause == nil || cause.Code != atollpb.ErrorCode_ACTOR_DIED {
		msg := "actor died"
		if cause != nil {
			msg = cause.Message
		}
		cause = errs.ToProto(&errs.ActorDiedError{ActorID: id.String(), Name: st.name, Message: msg})
	}
	st.mu.Lock()
	if st.dead != nil {
		st.mu.Unlock()
		return
	}
	st.dead = cause
	pending := append([]*pendingTask(nil), st.queue...)
	for _, pt := range st.inflight {
		pending = append(pending, pt)
	}
	st.queue = nil
	st.mu.Unlock()
	for _, pt := range pending {
		rt.finish(pt, cause)
	}
}

// onEvent applies an actor state change published by the GCS.
func (t *actorTable) onEvent(rt *core, info *atollpb.ActorInfo) {
	id := ids.MustFromBytes(info.ActorId)
	switch info.State {
	case atollpb.ActorState_ACTOR_DEAD:
		t.died(rt, id, info.DeathCause)
	case atollpb.ActorState_ACTOR_ALIVE:
		t.created(rt, id, info.Address)
	}
}

// enqueue records a call in call order (before its arguments resolve).
func (st *actorState) enqueue(pt *pendingTask) {
	st.mu.Lock()
	dead := st.dead
	if dead == nil {
		st.queue = append(st.queue, pt)
	}
	st.mu.Unlock()
	if dead != nil {
		pt.actor = nil // nothing to forget
		current().finish(pt, dead)
	}
}

// markReady notes that a call's arguments resolved and sends every call at
// the head of the queue that is ready.
func (st *actorState) markReady(rt *core, pt *pendingTask) {
	rt.tasks.mu.Lock()
	pt.ready = true
	rt.tasks.mu.Unlock()
	st.flush(rt)
}

func (st *actorState) flush(rt *core) {
	st.mu.Lock()
	if st.address == "" || st.dead != nil {
		st.mu.Unlock()
		return
	}
	var send []*pendingTask
	rt.tasks.mu.Lock()
	for len(st.queue) > 0 && st.queue[0].ready {
		pt := st.queue[0]
		st.queue = st.queue[1:]
		st.inflight[pt.id] = pt
		send = append(send, pt)
	}
	rt.tasks.mu.Unlock()
	// Send under st.mu so concurrent flushes keep call order.
	for _, pt := range send {
		rt.link.callActor(st.address, pt.spec)
	}
	st.mu.Unlock()
}

// resend sends a retried call again (it goes behind calls already sent).
func (st *actorState) resend(rt *core, pt *pendingTask) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead != nil || st.address == "" {
		return
	}
	rt.link.callActor(st.address, pt.spec)
}

// unsent removes a call that has not been sent yet; it reports whether it
// found one.
func (st *actorState) unsent(pt *pendingTask) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, q := range st.queue {
		if q == pt {
			st.queue = append(st.queue[:i], st.queue[i+1:]...)
			return true
		}
	}
	return false
}

// forget drops a finished call.
func (st *actorState) forget(pt *pendingTask) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.inflight, pt.id)
	for i, q := range st.queue {
		if q == pt {
			st.queue = append(st.queue[:i], st.queue[i+1:]...)
			break
		}
	}
}
