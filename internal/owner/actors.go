package owner

import (
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/compact"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// actorEntry is the caller side of one actor: where it lives, whether it
// is dead, and its calls in call order.
type actorEntry struct {
	id    ids.ActorID
	name  string
	owned bool // this process created it (it dies with the job)
	// handles counts the caller's handles (AddActor calls not yet
	// matched by DropActorHandle). An entry goes once no handle and no
	// call needs it, unless it is an owned live actor (killed when the
	// job ends).
	handles int

	address string // where the host takes calls; empty until created
	dead    *atollpb.ErrorInfo
	// queue holds the calls not sent yet, in call order; the head is sent
	// as soon as its arguments resolved and the actor has an address.
	queue []*task
	// inflight holds the calls sent and not finished (copied smaller
	// once mostly empty: package compact).
	inflight     map[ids.TaskID]*task
	inflightMark compact.Mark
	// sent numbers the calls sent to the actor (TaskSpec.sequence_number)
	// as caller (TaskSpec.caller_id), random per entry: its host starts
	// them in that order. An entry forgotten and made again is a new
	// caller, numbered from 1.
	sent   uint64
	caller ids.WorkerID
	// callerBytes is caller's bytes, shared read-only by the specs of
	// its calls (as their owner's ids are).
	callerBytes []byte
	// creation is the owned actor's creation as last sent, kept to send
	// it again when the actor's node dies (restarted: the restarts the
	// GCS counted when it last sent it).
	creation  *atollpb.TaskSpec
	restarted int32
	// resent counts the times this restart's creation was sent again
	// because the node it went to died (see restartResult).
	resent int
	// heard is the highest restart count the GCS's events named (the
	// count only grows over an actor's life): an answer to LocateActor
	// naming fewer is older than what the entry knows (ActorLocated).
	heard int32
	// locating: a LocateActor is in flight (one per actor at a time);
	// relocate: a call was lost again meanwhile, so its answer may be
	// older than that loss and the Table asks again (see callLost).
	locating, relocate bool
	// askEvery is the wait before the next lookup of an actor whose
	// calls wait for an address no event may bring (askAgain): it doubles
	// up to MaxAskEvery, and starts over once the entry has an address;
	// asking: an AskActor is due.
	askEvery time.Duration
	asking   bool
	// forgot is the address a lost call (callLost) made the entry
	// forget, given back if the lookup ends without placing the actor
	// (settle); empty once an event or an answer did.
	forgot string
	// deadNode is the address prefix ("<node hex>/") of the node a call
	// failed NODE_DIED on while the actor lived there: an answer placing
	// the actor there is older than that death (ActorLocated).
	deadNode string
}

// maxCreationResends bounds how many times one restart's creation is sent
// again after the node it went to died before it ran: each resend follows
// a node's death, so a cluster losing nodes this fast gives up.
const maxCreationResends = 8

// send emits a call to the actor with the next sequence number.
func (t *Table) send(a *actorEntry, spec *atollpb.TaskSpec) {
	a.sent++
	spec.SequenceNumber, spec.CallerId = a.sent, a.callerBytes
	e := t.callEffects.New()
	e.Address, e.Spec = a.address, spec
	t.emit(e)
}

// newCallerID names a new caller entry (Config.NewCallerID).
func (t *Table) newCallerID() ids.WorkerID {
	if t.cfg.NewCallerID != nil {
		return t.cfg.NewCallerID()
	}
	return ids.NewWorkerID()
}

// AddActor registers a handle to an actor (owned: this process created
// it). Registering a known actor counts one more handle; owned sticks
// once set.
func (t *Table) AddActor(id ids.ActorID, name string, owned bool) {
	a := t.actors[id]
	if a == nil {
		a = &actorEntry{id: id, name: name, inflight: map[ids.TaskID]*task{}}
		a.setCaller(t.newCallerID())
		t.actors[id] = a
	}
	a.handles++
	a.owned = a.owned || owned
}

// DropActorHandle forgets one handle to an actor (the garbage collector
// found it unreachable). The entry goes once nothing needs it.
func (t *Table) DropActorHandle(id ids.ActorID) {
	if a := t.actors[id]; a != nil {
		a.handles--
		t.maybeForget(a)
	}
}

// maybeForget drops an actor's entry when no handle and no call refers to
// it, unless it is an owned live actor.
func (t *Table) maybeForget(a *actorEntry) {
	if a.handles <= 0 && len(a.queue) == 0 && len(a.inflight) == 0 && (!a.owned || a.dead != nil) && t.actors[a.id] == a {
		delete(t.actors, a.id)
	}
}

// HasActor reports whether id is registered.
func (t *Table) HasActor(id ids.ActorID) bool { return t.actors[id] != nil }

// ActorEvent applies an actor state change published by the GCS.
func (t *Table) ActorEvent(info *atollpb.ActorInfo) {
	id, err := ids.FromBytes(info.GetActorId())
	if err != nil {
		return
	}
	if a := t.actors[id]; a != nil && info.NumRestarts > a.heard {
		a.heard = info.NumRestarts
	}
	switch info.State {
	case atollpb.ActorState_ACTOR_DEAD:
		t.borrowerDied(borrowerKey{actor: id})
		t.actorDied(id, info.DeathCause)
	case atollpb.ActorState_ACTOR_ALIVE:
		t.actorCreated(id, info.Address)
	case atollpb.ActorState_ACTOR_RESTARTING:
		if info.Address == "" {
			t.actorLost(id, info.NumRestarts)
		}
	}
}

// ActorLocated applies the GCS's answer about an actor (LocateActor, or
// the lookup of a passed handle's actor) as ActorEvent does, unless it
// may be older than what the entry knows: the answer travels apart from
// the events, so an event the GCS published after answering may come
// first. A death always applies (it is final); any other state only while
// the entry waits for an address, and only if it names no fewer restarts
// than the events did.
//
// It ends the lookup in flight (see callLost). If a call was lost again
// while it was (relocate), an answer other than a death may be older
// than that loss: it is ignored and the Table asks again. An answer
// placing the actor on the node a call saw die (NODE_DIED) is older than
// that death (the GCS has not heard of it yet) and is ignored too: the
// GCS's event about that node's actors follows, and the Table asks again
// RelocateAfter later in case that event is missed. If any other answer
// leaves the entry without an address (the actor is being created, or
// restarts where it was), it gets back the one it forgot (settle).
func (t *Table) ActorLocated(info *atollpb.ActorInfo) {
	id, err := ids.FromBytes(info.GetActorId())
	if err != nil {
		return
	}
	a := t.actors[id]
	if a == nil || a.dead != nil {
		return
	}
	again := a.relocate
	a.locating, a.relocate = false, false
	switch {
	case info.State == atollpb.ActorState_ACTOR_DEAD:
		t.ActorEvent(info)
		return
	case a.address != "":
	case again:
		t.locate(a)
		return
	case info.State == atollpb.ActorState_ACTOR_ALIVE && a.deadNode != "" && strings.HasPrefix(info.Address, a.deadNode):
		// The GCS, reachable, has not heard of that death yet; it will
		// (the head reports it until it lands) and its event follows.
		// Events are best effort: ask again a little later, so that
		// the calls waiting do not depend on that one event.
		a.locating = true
		t.emit(LocateActor{Actor: a.id, After: RelocateAfter})
		return
	case info.NumRestarts < a.heard:
	default:
		t.ActorEvent(info)
	}
	t.settle(a)
	t.askAgain(a)
}

// MaxAskEvery bounds the wait between two lookups of an actor whose
// calls wait for its address (askAgain).
const MaxAskEvery = 30 * time.Second

// askAgain asks the GCS again, later, where an actor is whose calls wait
// for an address that only an event would bring: the actor is being
// created, or restarts, and the event saying it started may be missed
// (events are best effort; a node cut off from the NATS server for a
// moment misses what was published meanwhile). The wait doubles from
// RelocateAfter up to MaxAskEvery while the answers leave the entry
// without an address. An owned actor's address comes with its
// creation's result, not from an event: it is not asked for.
func (t *Table) askAgain(a *actorEntry) {
	if a.address != "" || a.dead != nil || a.locating || a.asking || a.owned || len(a.queue) == 0 {
		return
	}
	a.askEvery = min(max(2*a.askEvery, RelocateAfter), MaxAskEvery)
	a.asking = true
	t.emit(AskActor{Actor: a.id, After: a.askEvery})
}

// AskDue tells the Table that the wait of an AskActor is over: it asks
// the GCS where the actor is (LocateActor) if its calls still wait for
// an address; otherwise (an event brought it meanwhile) nothing.
func (t *Table) AskDue(id ids.ActorID) {
	a := t.actors[id]
	if a == nil {
		return
	}
	a.asking = false
	if a.address == "" && a.dead == nil && len(a.queue) > 0 {
		t.locate(a)
	}
}

// RelocateAfter is how long the Table lets the GCS catch up with a node
// death a call saw before asking it again where the actor is.
const RelocateAfter = time.Second

// LocateFailed tells the Table that the lookup LocateActor asked for
// gave up (the shell tried the GCS a few times). Nothing else may place
// the actor (it did not move, so no event comes): the entry gets back the
// address a FORWARD_LOST made it forget (settle), and the calls waiting
// go there, to complete or fail as calls there do (at once if that node
// is known dead, NODE_DIED; past the forward lease if a call there is
// lost again, FORWARD_LOST); a failure naming that node asks again. An
// entry with no address to fall back on (a handle this process received,
// whose first lookup gave up: the GCS did not answer) asks again, and
// its calls wait for that answer as they would for the GCS's event. So
// no call waits for an answer that will not come.
func (t *Table) LocateFailed(id ids.ActorID) {
	a := t.actors[id]
	if a == nil || a.dead != nil {
		return
	}
	a.locating, a.relocate = false, false
	t.settle(a)
	if a.address == "" {
		t.locate(a)
	}
}

// callLost applies a failed call's word about its actor's host, whether
// or not the call is retried: NODE_DIED or FORWARD_LOST naming the node
// of the actor's address. The actor is gone from there, or may be (the
// call or its result was lost between the nodes; the gateway marks a
// lost call crashed): the entry forgets the address (lostHost), so later
// calls wait rather than go where the last one failed, and the Table
// asks the GCS where the actor is (locate). The actor may have moved and
// the event that said so missed (events are best effort), or not, and
// then no event comes.
func (t *Table) callLost(a *actorEntry, e *atollpb.ErrorInfo) {
	code := e.GetCode()
	if (code != atollpb.ErrorCode_NODE_DIED && code != atollpb.ErrorCode_FORWARD_LOST) || a.dead != nil || !a.hostOn(e.GetNodeId()) {
		return
	}
	if code == atollpb.ErrorCode_NODE_DIED {
		a.deadNode = hex.EncodeToString(e.GetNodeId()) + "/"
	}
	a.forgot = a.address
	a.lostHost()
	t.locate(a)
}

// locate emits LocateActor unless a lookup of the actor is in flight;
// then it marks that its answer may be older than this loss.
func (t *Table) locate(a *actorEntry) {
	if a.locating {
		a.relocate = true
		return
	}
	a.locating = true
	t.emit(LocateActor{Actor: a.id})
}

// settle ends a lookup that did not place the actor: an entry still
// without an address gets back the one a lost call made it forget, and
// its waiting calls go there. No call waits for an answer that will not
// come.
func (t *Table) settle(a *actorEntry) {
	if a.address == "" && a.forgot != "" && !a.locating {
		a.address, a.forgot = a.forgot, ""
		t.flush(a)
	}
}

// actorLost applies the GCS's word that an actor's node died and it
// restarts elsewhere: calls wait for its new address; its owner sends its
// creation again (restarts: the count with this restart), once per
// restart.
func (t *Table) actorLost(id ids.ActorID, restarts int32) {
	a := t.actors[id]
	if a == nil || a.dead != nil {
		return
	}
	if a.address != "" {
		a.lostHost()
	}
	a.forgot = "" // it waits for the new host: the old address is no use
	if !a.owned || a.creation == nil || restarts <= a.restarted {
		return
	}
	spec := proto.CloneOf(a.creation)
	spec.Attempt++
	if spec.ActorCreation == nil {
		spec.ActorCreation = &atollpb.ActorCreationSpec{}
	}
	spec.ActorCreation.NumRestarts = restarts
	a.creation, a.restarted, a.resent = spec, restarts, 0
	if t.restarts == nil {
		t.restarts = map[ids.TaskID]ids.ActorID{}
	}
	t.restarts[ids.MustFromBytes(spec.TaskId)] = id
	t.emit(SendTask{Spec: spec})
}

// lostHost forgets an actor's host, gone with its node: calls wait for
// the next one, to which this process is a new caller (the calls it sends
// are numbered from 1 again, as the new host expects).
func (a *actorEntry) lostHost() {
	a.address, a.sent = "", 0
	a.setCaller(ids.NewWorkerID())
}

// setCaller makes id the entry's caller id.
func (a *actorEntry) setCaller(id ids.WorkerID) { a.caller, a.callerBytes = id, id.Bytes() }

// hostOn reports whether the actor's address is on node (an error's
// node_id): a cluster address is "<node hex>/<host>".
func (a *actorEntry) hostOn(node []byte) bool {
	return len(node) == ids.Len16 && strings.HasPrefix(a.address, hex.EncodeToString(node)+"/")
}

// keepCreation keeps the creation of an actor this process owns.
func (t *Table) keepCreation(spec *atollpb.TaskSpec) {
	if a := t.actors[ids.MustFromBytes(spec.ActorId)]; a != nil && a.owned {
		a.creation = spec
	}
}

// restartResult applies the answer to a creation sent again to restart an
// actor (false if res answers none). A creation lost with the node it was
// sent to (NODE_DIED, FORWARD_LOST: that node's death may reach this
// process after the GCS's word that the actor restarts, or the node held
// the actor's placement-group bundle, placed again elsewhere later) is
// sent again as a new attempt, up to maxCreationResends times; any other
// failure kills the actor, and the shell reports its death
// (ActorRestartFailed), since no host will.
func (t *Table) restartResult(id ids.TaskID, res *atollpb.TaskResult) bool {
	actorID, ok := t.restarts[id]
	if !ok {
		return false
	}
	a := t.actors[actorID]
	if a == nil || a.creation == nil || res.Attempt != a.creation.Attempt {
		return true // an earlier restart's answer
	}
	if code := res.GetError().GetCode(); (code == atollpb.ErrorCode_NODE_DIED || code == atollpb.ErrorCode_FORWARD_LOST) &&
		a.dead == nil && a.resent < maxCreationResends {
		spec := proto.CloneOf(a.creation)
		spec.Attempt++
		a.creation = spec
		a.resent++
		t.emit(SendTask{Spec: spec})
		return true
	}
	delete(t.restarts, id)
	if res.Error == nil {
		t.actorCreated(actorID, res.ActorAddress)
		return true
	}
	t.actorDied(actorID, res.Error)
	t.emit(ActorRestartFailed{Actor: actorID, Name: a.name, Err: res.Error})
	return true
}

// ActorKilled marks an actor dead on the caller's own order (Kill).
func (t *Table) ActorKilled(id ids.ActorID, reason string) {
	a := t.actors[id]
	if a == nil {
		return
	}
	t.borrowerDied(borrowerKey{actor: id})
	t.actorDied(id, errs.ToProto(&errs.ActorDiedError{ActorID: id.String(), Name: a.name, Message: reason}))
}

// actorCreated records where a started actor lives and sends the calls
// that waited for it.
func (t *Table) actorCreated(id ids.ActorID, address string) {
	a := t.actors[id]
	if a == nil || address == "" || a.dead != nil {
		return
	}
	if a.address == "" {
		a.address, a.forgot, a.askEvery = address, "", 0
	}
	t.flush(a)
}

// actorDied fails every pending call of a dead actor, and any later one.
func (t *Table) actorDied(id ids.ActorID, cause *atollpb.ErrorInfo) {
	a := t.actors[id]
	if a == nil || a.dead != nil {
		return
	}
	if cause == nil || cause.Code != atollpb.ErrorCode_ACTOR_DIED {
		msg := "actor died"
		if cause != nil {
			msg = cause.Message
		}
		cause = errs.ToProto(&errs.ActorDiedError{ActorID: id.String(), Name: a.name, Message: msg})
	}
	a.dead = cause
	pending := append([]*task(nil), a.queue...)
	inflight := make([]*task, 0, len(a.inflight))
	for _, tk := range a.inflight {
		inflight = append(inflight, tk)
	}
	sort.Slice(inflight, func(i, j int) bool { return inflight[i].seq < inflight[j].seq })
	a.queue = nil
	for _, tk := range append(inflight, pending...) {
		t.finish(tk, cause)
	}
	t.maybeForget(a)
}

// flush sends every call at the head of the queue whose arguments
// resolved.
func (t *Table) flush(a *actorEntry) {
	if a.address == "" || a.dead != nil {
		return
	}
	for len(a.queue) > 0 && a.queue[0].dispatched {
		tk := a.queue[0]
		a.queue[0] = nil
		if len(a.queue) == 1 {
			a.queue = a.queue[:0] // its start kept: the next call reuses the array
		} else {
			a.queue = a.queue[1:]
		}
		a.inflight[tk.id()] = tk
		t.send(a, tk.spec)
	}
	if len(a.queue) == 0 && cap(a.queue) > maxKeptQueue {
		a.queue = nil // the backing array goes with its calls
	}
}

// maxKeptQueue bounds the array an actor's emptied queue of calls keeps
// for the next.
const maxKeptQueue = 64

// unsent removes a call that has not been sent yet; it reports whether it
// found one.
func (a *actorEntry) unsent(tk *task) bool {
	for i, q := range a.queue {
		if q == tk {
			a.queue = append(a.queue[:i], a.queue[i+1:]...)
			return true
		}
	}
	return false
}

// forget drops a finished call. Nothing ranges over inflight while a
// call finishes (actorDied finishes a copy), so it is compacted here.
func (a *actorEntry) forget(tk *task) {
	delete(a.inflight, tk.id())
	a.inflight = compact.Map(a.inflight, &a.inflightMark)
	a.unsent(tk)
}

// OwnedLiveActors lists the actors this process created that are not
// known dead, in id order.
func (t *Table) OwnedLiveActors() []ids.ActorID {
	var out []ids.ActorID
	for id, a := range t.actors {
		if a.owned && a.dead == nil {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}

// ActorDead returns the cause of an actor's death, nil while it lives (or
// is unknown).
func (t *Table) ActorDead(id ids.ActorID) *atollpb.ErrorInfo {
	if a := t.actors[id]; a != nil {
		return a.dead
	}
	return nil
}
