package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The sending side of forwarding: the work this node sent to other nodes
// (pending), until its result comes back, its node dies or its lease
// runs out.

// sendTask records a task attempt sent to another node and publishes it.
func (f *Forwarder) sendTask(now time.Time, e SendTask) {
	k := keyOf(e.Spec.TaskId, e.Spec.Attempt)
	f.pending[k] = append(f.pending[k], &forward{node: e.Node, owner: e.Owner, relay: e.Relay, name: e.Spec.Name, renewed: now, hops: e.Hops,
		generator: e.Spec.GetGenerator()})
	f.publishForward(k, e.Node, KindTask, &atollpb.ForwardTask{Spec: e.Spec, OriginNode: f.cfg.Self.Bytes(), Hops: e.Hops})
	f.failIfDead(e.Node)
}

// sendCall records an actor call sent to another node and publishes it.
func (f *Forwarder) sendCall(now time.Time, e SendCall) {
	k := keyOf(e.Spec.TaskId, e.Spec.Attempt)
	f.pending[k] = append(f.pending[k], &forward{node: e.Node, owner: e.Caller, name: e.Spec.Name, isCall: true, renewed: now})
	f.publishForward(k, e.Node, KindCall, &atollpb.ForwardActorCall{Address: e.Address, Spec: e.Spec, OriginNode: f.cfg.Self.Bytes()})
	f.failIfDead(e.Node)
}

// publishForward publishes a forward just recorded; one too large for
// the control plane fails its owner at once.
func (f *Forwarder) publishForward(k taskKey, node ids.NodeID, kind string, m proto.Message) {
	if err := f.fits(m); err != nil {
		f.deliver(&atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err)})
		return
	}
	f.emit(Publish{To: node, Kind: kind, Msg: m, Unsent: UnsentFailsForward})
}

// fits checks that m can travel on the control plane.
func (f *Forwarder) fits(m proto.Message) error {
	if f.cfg.MaxPayload <= 0 {
		return nil
	}
	if n := int64(proto.Size(m)); n > f.cfg.MaxPayload {
		return errTooLarge(n, f.cfg.MaxPayload)
	}
	return nil
}

// errTooLarge is the error of a message of n bytes past the control
// plane's limit.
func errTooLarge(n, limit int64) error {
	return errs.Invalidf("a %d-byte message exceeds the NATS server's max payload (%d bytes): pass large values as object refs (atoll.Put) instead of inline", n, limit)
}

// cancelSent asks the nodes holding the attempts of a task sent from here
// to cancel them.
func (f *Forwarder) cancelSent(e CancelSent) {
	var keys []taskKey
	for k := range f.pending {
		if k.task == e.Task {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		for _, fw := range f.pending[k] {
			if !fw.isCall {
				f.emit(Publish{To: fw.node, Kind: KindCancel, Msg: &atollpb.ForwardCancel{TaskId: e.Task.Bytes(), NonRecursive: e.NonRecursive}})
			}
		}
	}
}

// deliver hands the result of work sent to another node to its owner:
// the newest entry of its stack.
func (f *Forwarder) deliver(res *atollpb.TaskResult) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := f.pending[k]
	if len(stack) == 0 {
		return // a duplicate, late (failed already), or never sent from here
	}
	f.route(k, len(stack)-1, res)
}

// route removes entry i of k's pending stack and hands res to its owner.
func (f *Forwarder) route(k taskKey, i int, res *atollpb.TaskResult) {
	stack := f.pending[k]
	fw := stack[i]
	if stack = slices.Delete(stack, i, i+1); len(stack) == 0 {
		delete(f.pending, k)
	} else {
		f.pending[k] = stack
	}
	if fw.generator || res.GetError().GetCode() == atollpb.ErrorCode_FORWARD_LOST {
		f.remember(k, fw) // its items or its result may still come (late.go)
	}
	switch {
	case fw.relay:
		f.answer(res) // spilled back through this node: pass it on
	case fw.owner != nil:
		f.emit(Deliver{To: fw.owner, Result: res})
	}
}

// renew records that node still holds the attempts listed.
func (f *Forwarder) renew(node ids.NodeID, attempts []*atollpb.AttemptKey, now time.Time) {
	f.renewals++
	for _, a := range attempts {
		id, err := ids.FromBytes(a.TaskId)
		if err != nil {
			continue
		}
		for _, fw := range f.pending[taskKey{id, a.Attempt}] {
			if fw.node == node {
				fw.renewed = now
			}
		}
	}
}

// expire fails the forwarded attempts whose node has not confirmed them
// within the lease: the task never arrived, or its result was lost (both
// travel at most once). Owners retry them like a worker crash.
func (f *Forwarder) expire(now time.Time) {
	lease := f.cfg.ForwardLease
	var due []taskKey
	for k, stack := range f.pending {
		for _, fw := range stack {
			if now.Sub(fw.renewed) > lease {
				due = append(due, k)
				break
			}
		}
	}
	slices.SortFunc(due, compareKeys)
	var lost int
	for _, k := range due {
		for i := len(f.pending[k]) - 1; i >= 0; i-- {
			fw := f.pending[k][i]
			if now.Sub(fw.renewed) <= lease {
				continue
			}
			err := &errs.ForwardLostError{NodeID: fw.node.String(), TaskName: fw.name, TaskID: k.task.String(),
				Message: fmt.Sprintf("node %s did not confirm it held the attempt for %v (lease %v): the work or its result was lost in transit", fw.node.Short(), now.Sub(fw.renewed).Round(time.Millisecond), lease)}
			lost++
			// route deletes entry i; the entries below it keep their indices.
			f.route(k, i, &atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err), ActorCrashed: fw.isCall})
		}
	}
	if lost > 0 {
		f.forwardsLost += uint64(lost)
		f.log(slog.LevelWarn, "cluster: forwarded work lost: its node stopped confirming it; failed for its owners to retry",
			"attempts", lost, "lease", lease)
	}
}

// failIfDead fails the work pending on node if it is dead.
func (f *Forwarder) failIfDead(node ids.NodeID) {
	if !f.dead.has(node) {
		return
	}
	var due []taskKey
	for k, stack := range f.pending {
		for _, fw := range stack {
			if fw.node == node {
				due = append(due, k)
				break
			}
		}
	}
	slices.SortFunc(due, compareKeys)
	for _, k := range due {
		for i := len(f.pending[k]) - 1; i >= 0; i-- {
			fw := f.pending[k][i]
			if fw.node != node {
				continue
			}
			err := &errs.NodeDiedError{NodeID: node.String(), TaskName: fw.name, TaskID: k.task.String(), Message: "the node left the cluster"}
			// route deletes entry i; the entries below it keep their indices.
			f.route(k, i, &atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err), ActorCrashed: fw.isCall})
		}
	}
}

// publishFailed does what a Publish the shell could not send asks.
func (f *Forwarder) publishFailed(e PublishFailed) {
	p := e.Publish
	switch p.Unsent {
	case UnsentFailsForward:
		// The forward's entry: the newest to that node on that link (the
		// node may have died meanwhile, its entries failed already).
		var spec *atollpb.TaskSpec
		var hops int32
		switch m := p.Msg.(type) {
		case *atollpb.ForwardTask:
			spec, hops = m.Spec, m.Hops
		case *atollpb.ForwardActorCall:
			spec = m.Spec
		default:
			return
		}
		k := keyOf(spec.TaskId, spec.Attempt)
		stack := f.pending[k]
		for i := len(stack) - 1; i >= 0; i-- {
			if fw := stack[i]; fw.node == p.To && fw.hops == hops && fw.isCall == (p.Kind == KindCall) {
				f.route(k, i, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(e.Err)})
				return
			}
		}
	case UnsentSendsFailure:
		if m, ok := p.Msg.(*atollpb.ForwardedResult); ok {
			f.emit(Publish{To: p.To, Kind: KindResult, Msg: f.failedAnswer(m.Result, p.To, e.Err)})
		}
	case UnsentFailsItem:
		if m, ok := p.Msg.(*atollpb.ForwardedResult); ok {
			k := keyOf(m.Result.TaskId, m.Result.Attempt)
			if len(f.inbound[k]) > 0 && f.itemFailed[k] == nil {
				f.failItem(m.Result, p.To, e.Err)
			}
		}
	case UnsentForgetsOwner:
		f.log(slog.LevelWarn, "cluster: publish an owner's exit", "err", e.Err)
		if m, ok := p.Msg.(*atollpb.OwnersExited); ok {
			for _, b := range m.WorkerIds {
				if w, err := ids.FromBytes(b); err == nil {
					f.owners.exited(f.cfg.Self, w)
				}
			}
		}
	}
}
