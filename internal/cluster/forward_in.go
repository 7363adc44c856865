package cluster

import (
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The receiving side of forwarding: the work other nodes sent here
// (inbound), admitted within the quotas, confirmed to its origin every
// lease tick, answered when it ends.

// taskArrived admits a task another node forwarded and submits it to the
// raylet.
func (f *Forwarder) taskArrived(now time.Time, m *atollpb.ForwardTask) {
	if f.duplicate(keyOf(m.Spec.TaskId, m.Spec.Attempt), m.OriginNode, m.Hops, "") {
		return
	}
	a, ok := f.admit(now, m.Spec, m.OriginNode, "")
	if !ok {
		return
	}
	k := keyOf(m.Spec.TaskId, m.Spec.Attempt)
	a.hops = m.Hops
	f.inbound[k] = append(f.inbound[k], a)
	f.owners.record(m.Spec.OwnerId, m.Spec.OwnerAddress)
	f.emit(Submit{Spec: m.Spec, Hops: m.Hops})
}

// callArrived admits an actor call another node forwarded and pushes it
// to its host.
func (f *Forwarder) callArrived(now time.Time, m *atollpb.ForwardActorCall) {
	if f.duplicate(keyOf(m.Spec.TaskId, m.Spec.Attempt), m.OriginNode, 0, m.Address) {
		return
	}
	a, ok := f.admit(now, m.Spec, m.OriginNode, m.Address)
	if !ok {
		return
	}
	k := keyOf(m.Spec.TaskId, m.Spec.Attempt)
	f.inbound[k] = append(f.inbound[k], a)
	f.owners.record(m.Spec.OwnerId, m.Spec.OwnerAddress)
	f.emit(PushCall{Address: m.Address, Spec: m.Spec})
}

// duplicate reports whether work arriving from origin on link hops (an
// actor call: for the host at address) is held here already: the same
// message delivered twice (a fault plan's duplicate rule). Found by the
// interaction harness (internal/interaction, testdata/duplicate_forward.txt):
// submitted again, a task attempt ran twice on this node (the raylet
// keys its running tasks by task id, so the two copies also shared one
// entry), and the second inbound entry, which no result pops, was
// confirmed to the origin and counted against its quota for ever. A
// spillback chain that passes through this node again arrives on another
// link (its hops differ), so it is not taken for a copy. A copy arriving
// after the attempt ended is not recognised: nothing is remembered of
// work that ended.
func (f *Forwarder) duplicate(k taskKey, originID []byte, hops int32, address string) bool {
	origin, err := ids.FromBytes(originID)
	if err != nil {
		return false
	}
	for _, a := range f.inbound[k] {
		if a.origin == origin && a.hops == hops && a.address == address {
			f.log(slog.LevelDebug, "cluster: work delivered twice: the copy is dropped", "task", k.task.Short(), "attempt", k.attempt, "origin", origin.Short())
			return true
		}
	}
	return false
}

// admit accounts for work origin forwarded here (address is an actor
// call's host) and returns its inbound entry; past a quota it refuses the
// work back to origin with RESOURCE_EXHAUSTED instead and returns false.
func (f *Forwarder) admit(now time.Time, spec *atollpb.TaskSpec, originID []byte, address string) (arrival, bool) {
	origin := ids.MustFromBytes(originID)
	if !f.members[origin] && !f.onProbation(now, origin) {
		f.refuseStranger(origin, spec.TaskId, spec.Attempt)
		return arrival{}, false
	}
	size := int64(proto.Size(spec))
	why := f.quota.admit(origin, size)
	if why == "" {
		return arrival{origin: origin, address: address, size: size}, true
	}
	err := &errs.ResourceExhaustedError{NodeID: f.cfg.Self.String(), TaskName: spec.Name, TaskID: ids.MustFromBytes(spec.TaskId).String(),
		Message: why}
	res := &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(err)}
	f.emit(Publish{To: origin, Kind: KindResult, Msg: &atollpb.ForwardedResult{Result: res, FromNode: f.cfg.Self.Bytes()}})
	return arrival{}, false
}

// logRefused logs the refusals since the last lease tick, in one line.
func (f *Forwarder) logRefused() {
	if n, origins := f.quota.takeUnlogged(); n > 0 {
		c := f.cfg
		f.log(slog.LevelWarn, "cluster: refused work forwarded past this node's quotas (RESOURCE_EXHAUSTED to its owners)",
			"refused", n, "by_origin", origins, "held", f.quota.total.n, "held_bytes", f.quota.total.bytes,
			"max_per_origin", c.MaxForwardedPerOrigin, "max", c.MaxForwarded,
			"max_bytes_per_origin", c.MaxForwardedBytesPerOrigin, "max_bytes", c.MaxForwardedBytes)
	}
}

// answer sends the result of work another node sent here back to it:
// the newest entry of its stack.
func (f *Forwarder) answer(res *atollpb.TaskResult) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := f.inbound[k]
	if len(stack) == 0 {
		return // a late duplicate, or its origin died
	}
	top := stack[len(stack)-1]
	origin := top.origin
	f.quota.release(origin, top.size)
	if info := f.itemFailed[k]; info != nil {
		// An item could not be sent back: the attempt was cancelled for
		// it, and ends with that error.
		delete(f.itemFailed, k)
		res = &atollpb.TaskResult{TaskId: res.TaskId, Attempt: res.Attempt, WorkerId: res.WorkerId, Error: info}
	}
	if len(stack) == 1 {
		delete(f.inbound, k)
	} else {
		f.inbound[k] = stack[:len(stack)-1]
	}
	m := &atollpb.ForwardedResult{Result: res, FromNode: f.cfg.Self.Bytes(), Hops: top.hops}
	if err := f.fits(m); err != nil {
		// Too large: the origin must still learn that the attempt ended.
		f.emit(Publish{To: origin, Kind: KindResult, Msg: f.failedAnswer(res, origin, err)})
		return
	}
	f.emit(Publish{To: origin, Kind: KindResult, Msg: m, Unsent: UnsentSendsFailure})
}

// failedAnswer is the message that tells origin an attempt ended whose
// result res could not be sent back (err).
func (f *Forwarder) failedAnswer(res *atollpb.TaskResult, origin ids.NodeID, err error) *atollpb.ForwardedResult {
	info := errs.ToProto(err)
	info.Message = "the result could not be sent back to node " + origin.Short() + ": " + info.Message
	failed := &atollpb.TaskResult{TaskId: res.TaskId, Attempt: res.Attempt, WorkerId: res.WorkerId, ActorCrashed: res.ActorCrashed, Error: info}
	return &atollpb.ForwardedResult{Result: failed, FromNode: f.cfg.Self.Bytes()}
}

// noHost answers every call forwarded here to the local address, which
// has no actor any more, with ActorDiedError.
func (f *Forwarder) noHost(address string) {
	if address == "" {
		return
	}
	var dead []taskKey
	for k, stack := range f.inbound {
		if slices.ContainsFunc(stack, func(a arrival) bool { return a.address == address }) {
			dead = append(dead, k)
		}
	}
	slices.SortFunc(dead, compareKeys)
	for _, k := range dead {
		err := &errs.ActorDiedError{Message: "no actor at " + address + " on node " + f.cfg.Self.Short() + " (it died or was never there)"}
		f.answer(&atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err)})
	}
}

// confirmHeld renews the lease of every attempt another node forwarded
// here and this node still holds: one HeldWork per origin (split so each
// stays small).
func (f *Forwarder) confirmHeld() {
	byOrigin := map[ids.NodeID][]*atollpb.AttemptKey{}
	for _, k := range sortedKeys(f.inbound) {
		var seen ids.NodeID
		for _, a := range f.inbound[k] {
			if a.origin == seen {
				continue // the same origin twice in a spillback chain
			}
			seen = a.origin
			byOrigin[a.origin] = append(byOrigin[a.origin], &atollpb.AttemptKey{TaskId: k.task.Bytes(), Attempt: k.attempt})
		}
	}
	origins := make([]ids.NodeID, 0, len(byOrigin))
	for o := range byOrigin {
		origins = append(origins, o)
	}
	slices.SortFunc(origins, compareNodes)
	for _, origin := range origins {
		for chunk := range slices.Chunk(byOrigin[origin], maxHeldPerMessage) {
			f.emit(Publish{To: origin, Kind: KindHeld, Msg: &atollpb.HeldWork{FromNode: f.cfg.Self.Bytes(), Attempts: chunk}})
		}
	}
}
