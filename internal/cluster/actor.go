package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Messages to the gateway actor from the raylet and the node's links.
type (
	forwardTask struct {
		node  ids.NodeID
		spec  *atollpb.TaskSpec
		owner *actor.PID
		hops  int32
	}
	forwardCall struct {
		node    ids.NodeID
		address string
		spec    *atollpb.TaskSpec
		caller  *actor.PID
	}
	cancelForwarded struct {
		id           ids.TaskID
		nonRecursive bool
	}
	// ackForwarded: the raylet has a generator ack for an attempt it
	// does not run; pass it on link hops+1 (generators.go).
	ackForwarded struct {
		ack  *atollpb.GeneratorAck
		hops int32
	}
	// locate is a request for the copies of an object this node owns.
	locate struct{ msg *nats.Msg }
	// leaseTick: confirm the work held for other nodes, expire the work
	// other nodes stopped confirming.
	leaseTick struct{}
	// ownerExited: a worker or actor process of this node exited.
	ownerExited struct{ worker ids.WorkerID }
	// getSizes asks the gateway for the sizes of its tables (a
	// *atollpb.NodeStats with the gateway's fields set).
	getSizes struct{}
	// getCounters asks for the lease protocol's counters (tests).
	getCounters   struct{}
	leaseCounters struct{ renewals, sweeps, lost, restarts uint64 }
)

// taskKey names one attempt of a task or one actor call.
type taskKey struct {
	task    ids.TaskID
	attempt int32
}

func keyOf(taskID []byte, attempt int32) taskKey {
	return taskKey{task: ids.MustFromBytes(taskID), attempt: attempt}
}

// forward is a task or call this node sent to another node, waiting for
// its result.
type forward struct {
	node   ids.NodeID
	owner  *actor.PID // where the result goes (the gateway itself for a task relayed onwards)
	name   string
	isCall bool
	// renewed is when node last confirmed that it holds the attempt (at
	// first, when it was sent): past the lease, the attempt is lost.
	renewed time.Time
	// hops names the link: the ForwardTask's hops (0 for an actor call).
	// A generator's items and acks travel the links one by one.
	hops int32
}

// arrival is work another node sent here: the node to answer, for an
// actor call the host's local address, and the encoded size of its spec
// (counted against the origin's quota while it is held).
type arrival struct {
	origin  ids.NodeID
	address string
	size    int64
	hops    int32 // the ForwardTask's hops (0 for an actor call)
}

// gateway is the actor half of a Gateway. All fields are owned by its
// goroutine, except the fetcher's address table (the fetcher is shared
// with worker proxies and locks it) and owners (shared with the fetcher).
type gateway struct {
	cfg   *Config
	fetch *fetcher
	// pending: work sent to other nodes; inbound: work other nodes sent
	// here. Both are stacks per key: a task that spills back and forth
	// between two nodes passes through a gateway more than once, and its
	// result retraces the chain last in, first out.
	pending map[taskKey][]*forward
	inbound map[taskKey][]arrival
	peers   map[ids.NodeID]*atollpb.NodeLoad
	// dead holds the nodes that died or left, oldest first, at most
	// cfg.MaxDeadNodes: their late reports and copies are ignored.
	dead *fifoSet[ids.NodeID]
	// heard is the set of nodes heard from, published for WaitPeers: live
	// peers and the dead nodes still remembered.
	heard *peerSet
	// copies is the directory of the copies other nodes pulled of objects
	// owned on this node (the primary's node is in the object's value).
	copies map[ids.ObjectID][]ids.NodeID
	// owners maps nodes to the owners living there of objects held here.
	owners *owners
	// quota accounts for inbound by origin; work past it is refused.
	quota *quota
	// tick fires the next leaseTick.
	tick *time.Timer
	// forwardsLost counts attempts failed with FORWARD_LOST.
	forwardsLost uint64
	// renewals counts HeldWork messages applied, sweeps lease ticks,
	// restarts the actor's restarts (a panic).
	renewals, sweeps, restarts uint64
	// itemFailed: the generator attempts running here one of whose items
	// could not be sent back (too large); their result carries the error
	// (generators.go). An entry lives while the attempt's inbound does.
	itemFailed map[taskKey]*atollpb.ErrorInfo
}

func newGatewayActor(cfg *Config, fetch *fetcher, heard *peerSet, own *owners) *gateway {
	return &gateway{cfg: cfg, fetch: fetch, pending: map[taskKey][]*forward{}, inbound: map[taskKey][]arrival{},
		peers: map[ids.NodeID]*atollpb.NodeLoad{}, dead: newFIFOSet[ids.NodeID](), heard: heard,
		copies: map[ids.ObjectID][]ids.NodeID{}, owners: own, quota: newQuota(cfg), itemFailed: map[taskKey]*atollpb.ErrorInfo{}}
}

// Receive implements actor.Actor.
func (g *gateway) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		g.armTick(ctx)
	case *actor.Stopping, *actor.Restarting:
		if g.tick != nil {
			g.tick.Stop()
		}
		if _, ok := m.(*actor.Restarting); ok {
			g.restarts++
		}
	case *leaseTick:
		g.logRefused()
		g.confirmHeld()
		g.expire(ctx, time.Now())
		g.sweeps++
		g.armTick(ctx)
	case *forwardTask:
		k := keyOf(m.spec.TaskId, m.spec.Attempt)
		g.pending[k] = append(g.pending[k], &forward{node: m.node, owner: m.owner, name: m.spec.Name, renewed: time.Now(), hops: m.hops})
		err := g.publish(nodeSubject(g.cfg.Prefix, m.node, "task"), &atollpb.ForwardTask{Spec: m.spec, OriginNode: g.cfg.NodeID.Bytes(), Hops: m.hops})
		g.failUnsent(ctx, k, m.spec, err)
		g.failIfDead(ctx, m.node)
	case *forwardCall:
		k := keyOf(m.spec.TaskId, m.spec.Attempt)
		g.pending[k] = append(g.pending[k], &forward{node: m.node, owner: m.caller, name: m.spec.Name, isCall: true, renewed: time.Now()})
		err := g.publish(nodeSubject(g.cfg.Prefix, m.node, "call"), &atollpb.ForwardActorCall{Address: m.address, Spec: m.spec, OriginNode: g.cfg.NodeID.Bytes()})
		g.failUnsent(ctx, k, m.spec, err)
		g.failIfDead(ctx, m.node)
	case *cancelForwarded:
		for k, stack := range g.pending {
			if k.task != m.id {
				continue
			}
			for _, f := range stack {
				if !f.isCall {
					_ = g.publish(nodeSubject(g.cfg.Prefix, f.node, "cancel"), &atollpb.ForwardCancel{TaskId: m.id.Bytes(), NonRecursive: m.nonRecursive})
				}
			}
		}
	case *atollpb.ForwardTask:
		a, ok := g.admit(m.Spec, m.OriginNode, "")
		if !ok {
			return
		}
		k := keyOf(m.Spec.TaskId, m.Spec.Attempt)
		a.hops = m.Hops
		g.inbound[k] = append(g.inbound[k], a)
		g.owners.record(m.Spec.OwnerId, m.Spec.OwnerAddress)
		ctx.Request(g.cfg.Raylet, &atollpb.SubmitTask{Spec: m.Spec, Forwarded: true, Hops: m.Hops})
	case *atollpb.ForwardActorCall:
		a, ok := g.admit(m.Spec, m.OriginNode, m.Address)
		if !ok {
			return
		}
		k := keyOf(m.Spec.TaskId, m.Spec.Attempt)
		g.inbound[k] = append(g.inbound[k], a)
		g.owners.record(m.Spec.OwnerId, m.Spec.OwnerAddress)
		ctx.Request(ctx.ActorSystem().NewLocalPID(m.Address), &atollpb.PushTask{Spec: m.Spec})
	case *actor.DeadLetterResponse:
		// A call forwarded here found no host at its address: the actor is
		// gone. Without an answer its caller would wait (and this node
		// would confirm it) forever.
		g.noHost(m.Target)
	case *atollpb.ForwardCancel:
		ctx.Send(g.cfg.Raylet, &atollpb.CancelTask{TaskId: m.TaskId, NonRecursive: m.NonRecursive})
	case *atollpb.TaskResult:
		if m.GeneratorItem != nil {
			// An item is not the end of the attempt: it goes back
			// without settling it (generators.go).
			g.itemFromRaylet(ctx, m)
			return
		}
		g.answer(m)
	case *atollpb.ForwardedResult:
		if from, err := ids.FromBytes(m.FromNode); err == nil && g.dead.has(from) {
			// From a node declared dead (healed from a partition, its
			// reconnect buffer flushed): its work was failed and retried.
			g.cfg.Logger.Debug("cluster: result from a dead node dropped", "node", from.Short())
			return
		}
		if m.Result.GeneratorItem != nil {
			g.itemFromPeer(ctx, m)
			return
		}
		g.deliver(ctx, m.Result)
	case *ackForwarded:
		g.forwardAck(m.ack, m.hops)
	case *atollpb.ForwardGeneratorAck:
		ctx.Send(g.cfg.Raylet, m) // its raylet writes it to the worker, or relays it
	case *atollpb.HeldWork:
		g.renew(ids.MustFromBytes(m.FromNode), m.Attempts, time.Now())
	case *ownerExited:
		// Tell every node (this one included: it forgets the owner too).
		b, _ := proto.Marshal(&atollpb.OwnersExited{NodeId: g.cfg.NodeID.Bytes(), WorkerIds: [][]byte{m.worker.Bytes()}})
		if err := g.cfg.Conn.Publish(ownersExitedSubject(g.cfg.Prefix), b); err != nil {
			g.cfg.Logger.Warn("cluster: publish an owner's exit", "err", err)
			g.owners.exited(g.cfg.NodeID, m.worker)
		}
	case *atollpb.OwnersExited:
		g.ownersExited(ctx, m)
	case *atollpb.NodeLoad:
		g.load(ctx, m)
	case *locate:
		g.locate(m.msg)
	case *atollpb.ObjectCopies:
		g.addCopies(m)
	case *atollpb.FreeObjects:
		for _, id := range m.ObjectIds {
			delete(g.copies, ids.MustObjectID(id))
		}
	case *getSizes:
		ctx.Respond(g.sizes())
	case *getCounters:
		ctx.Respond(leaseCounters{renewals: g.renewals, sweeps: g.sweeps, lost: g.forwardsLost, restarts: g.restarts})
	case membership.NodeLeft:
		g.nodeGone(ctx, m.ID, m.Dead)
	case membership.NodeJoined, membership.NodeUpdated:
	}
}

func (g *gateway) armTick(ctx actor.Context) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	g.tick = time.AfterFunc(g.cfg.ConfirmInterval, func() { root.Send(self, &leaseTick{}) })
}

// publish sends m on subject (publishTo), logging a failed publish.
func (g *gateway) publish(subject string, m proto.Message) error {
	err := publishTo(g.cfg.Conn, subject, m)
	if errors.Is(err, errs.ErrUnavailable) {
		g.cfg.Logger.Warn("cluster: publish failed", "subject", subject, "err", err)
	}
	return err
}

// publishTo sends m on subject without blocking (NATS buffers). A message
// larger than the NATS server's max payload is refused with an
// INVALID_ARGUMENT error; one that cannot be encoded or published is
// UNAVAILABLE.
func publishTo(conn *nats.Conn, subject string, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err == nil {
		if limit := conn.MaxPayload(); limit > 0 && int64(len(b)) > limit {
			return errs.Invalidf("a %d-byte message exceeds the NATS server's max payload (%d bytes): pass large values as object refs (atoll.Put) instead of inline", len(b), limit)
		}
		err = conn.Publish(subject, b)
	}
	if err != nil {
		return errs.Unavailablef("control plane: %v", err)
	}
	return nil
}

// failUnsent fails a forward that could not be published, so its owner
// is not left waiting.
func (g *gateway) failUnsent(ctx actor.Context, k taskKey, spec *atollpb.TaskSpec, err error) {
	if err == nil {
		return
	}
	g.deliver(ctx, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(err)})
}

// answer sends the result of work another node sent here back to it.
func (g *gateway) answer(res *atollpb.TaskResult) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := g.inbound[k]
	if len(stack) == 0 {
		return // a late duplicate, or its origin died
	}
	top := stack[len(stack)-1]
	origin := top.origin
	g.quota.release(origin, top.size)
	if info := g.itemFailed[k]; info != nil {
		// An item could not be sent back: the attempt was cancelled for
		// it, and ends with that error.
		delete(g.itemFailed, k)
		res = &atollpb.TaskResult{TaskId: res.TaskId, Attempt: res.Attempt, WorkerId: res.WorkerId, Error: info}
	}
	if len(stack) == 1 {
		delete(g.inbound, k)
	} else {
		g.inbound[k] = stack[:len(stack)-1]
	}
	err := g.publish(nodeSubject(g.cfg.Prefix, origin, "result"), &atollpb.ForwardedResult{Result: res, FromNode: g.cfg.NodeID.Bytes()})
	if err != nil {
		// Too large, say: the origin must still learn that the attempt ended.
		info := errs.ToProto(err)
		info.Message = "the result could not be sent back to node " + origin.Short() + ": " + info.Message
		failed := &atollpb.TaskResult{TaskId: res.TaskId, Attempt: res.Attempt, WorkerId: res.WorkerId, ActorCrashed: res.ActorCrashed, Error: info}
		_ = g.publish(nodeSubject(g.cfg.Prefix, origin, "result"), &atollpb.ForwardedResult{Result: failed, FromNode: g.cfg.NodeID.Bytes()})
	}
}

// noHost answers every call forwarded here to the local address of
// target, which has no actor any more, with ActorDiedError.
func (g *gateway) noHost(target *actor.PID) {
	if target == nil {
		return
	}
	var dead []taskKey
	for k, stack := range g.inbound {
		for _, a := range stack {
			if a.address != "" && a.address == target.Id {
				dead = append(dead, k)
				break
			}
		}
	}
	for _, k := range dead {
		err := &errs.ActorDiedError{Message: "no actor at " + target.Id + " on node " + g.cfg.NodeID.Short() + " (it died or was never there)"}
		g.answer(&atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err)})
	}
}

// deliver hands the result of work sent to another node to its owner.
func (g *gateway) deliver(ctx actor.Context, res *atollpb.TaskResult) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := g.pending[k]
	if len(stack) == 0 {
		return
	}
	g.route(ctx, k, len(stack)-1, res)
}

// route removes entry i of k's pending stack and hands res to its owner.
func (g *gateway) route(ctx actor.Context, k taskKey, i int, res *atollpb.TaskResult) {
	stack := g.pending[k]
	f := stack[i]
	if stack = slices.Delete(stack, i, i+1); len(stack) == 0 {
		delete(g.pending, k)
	} else {
		g.pending[k] = stack
	}
	if f.owner == nil {
		return
	}
	if f.owner.Equal(ctx.Self()) {
		g.answer(res) // spilled back through this node: pass it on
		return
	}
	ctx.Send(f.owner, res)
}

// confirmHeld renews the lease of every attempt another node forwarded
// here and this node still holds: one HeldWork per origin (split so each
// stays small).
func (g *gateway) confirmHeld() {
	byOrigin := map[ids.NodeID][]*atollpb.AttemptKey{}
	for k, stack := range g.inbound {
		var seen ids.NodeID
		for _, a := range stack {
			if a.origin == seen {
				continue // the same origin twice in a spillback chain
			}
			seen = a.origin
			byOrigin[a.origin] = append(byOrigin[a.origin], &atollpb.AttemptKey{TaskId: k.task.Bytes(), Attempt: k.attempt})
		}
	}
	for origin, keys := range byOrigin {
		for chunk := range slices.Chunk(keys, maxHeldPerMessage) {
			_ = g.publish(nodeSubject(g.cfg.Prefix, origin, "held"), &atollpb.HeldWork{FromNode: g.cfg.NodeID.Bytes(), Attempts: chunk})
		}
	}
}

// renew records that node still holds the attempts listed.
func (g *gateway) renew(node ids.NodeID, attempts []*atollpb.AttemptKey, now time.Time) {
	g.renewals++
	for _, a := range attempts {
		id, err := ids.FromBytes(a.TaskId)
		if err != nil {
			continue
		}
		for _, f := range g.pending[taskKey{id, a.Attempt}] {
			if f.node == node {
				f.renewed = now
			}
		}
	}
}

// expire fails the forwarded attempts whose node has not confirmed them
// within the lease: the task never arrived, or its result was lost (both
// travel at most once). Owners retry them like a worker crash.
func (g *gateway) expire(ctx actor.Context, now time.Time) {
	lease := g.cfg.ForwardLease
	var lost int
	for k := range g.pending {
		for i := len(g.pending[k]) - 1; i >= 0; i-- {
			f := g.pending[k][i]
			if now.Sub(f.renewed) <= lease {
				continue
			}
			err := &errs.ForwardLostError{NodeID: f.node.String(), TaskName: f.name, TaskID: k.task.String(),
				Message: fmt.Sprintf("node %s did not confirm it held the attempt for %v (lease %v): the work or its result was lost in transit", f.node.Short(), now.Sub(f.renewed).Round(time.Millisecond), lease)}
			lost++
			// route deletes entry i; the entries below it keep their indices.
			g.route(ctx, k, i, &atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err), ActorCrashed: f.isCall})
		}
	}
	if lost > 0 {
		g.forwardsLost += uint64(lost)
		g.cfg.Logger.Warn("cluster: forwarded work lost: its node stopped confirming it; failed for its owners to retry",
			"attempts", lost, "lease", lease)
	}
}

// ownersExited forgets owner processes that exited on their node and
// frees the objects they owned here.
func (g *gateway) ownersExited(ctx actor.Context, m *atollpb.OwnersExited) {
	node := ids.MustFromBytes(m.NodeId)
	for _, b := range m.WorkerIds {
		w, err := ids.FromBytes(b)
		if err != nil {
			continue
		}
		// On the owner's own node the raylet already reclaimed them.
		if g.owners.exited(node, w) && node != g.cfg.NodeID {
			ctx.Send(g.cfg.Store, &atollpb.ClientDisconnected{ClientId: w.Bytes()})
		}
	}
}

func (g *gateway) locate(msg *nats.Msg) {
	id, err := ids.ObjectIDFromBytes(msg.Data)
	if err != nil {
		return
	}
	reply := &atollpb.ObjectCopies{ObjectId: id.Bytes()}
	for _, n := range g.copies[id] {
		reply.NodeIds = append(reply.NodeIds, n.Bytes())
	}
	b, _ := proto.Marshal(reply)
	_ = msg.Respond(b)
}

func (g *gateway) addCopies(m *atollpb.ObjectCopies) {
	id := ids.MustObjectID(m.ObjectId)
	for _, b := range m.NodeIds {
		n, err := ids.FromBytes(b)
		if err != nil {
			continue
		}
		if m.Dropped {
			// The AMM dropped that node's copy.
			if nodes := slices.DeleteFunc(g.copies[id], func(x ids.NodeID) bool { return x == n }); len(nodes) == 0 {
				delete(g.copies, id)
			} else {
				g.copies[id] = nodes
			}
			continue
		}
		if !g.dead.has(n) && !slices.Contains(g.copies[id], n) {
			g.copies[id] = append(g.copies[id], n)
		}
	}
}

// load records a node's report and gives the raylet the new view.
func (g *gateway) load(ctx actor.Context, m *atollpb.NodeLoad) {
	node := ids.MustFromBytes(m.NodeId)
	if node == g.cfg.NodeID || g.dead.has(node) {
		return
	}
	if m.Leaving {
		g.nodeGone(ctx, node, false)
		return
	}
	if old := g.peers[node]; old == nil {
		g.fetch.setAddr(node, m.TransferAddress)
		g.heard.add(node)
		g.cfg.Logger.Debug("cluster: node joined the view", "node", node.Short())
	}
	g.peers[node] = m
	g.sendView(ctx)
}

func (g *gateway) sendView(ctx actor.Context) {
	view := &raylet.PeerView{Nodes: make([]raylet.NodeView, 0, len(g.peers))}
	for id, l := range g.peers {
		if l.Draining {
			continue // it takes no new work
		}
		view.Nodes = append(view.Nodes, raylet.NodeView{ID: id, Total: raylet.Resources(l.Total).Clone(),
			Available: raylet.Resources(l.Available).Clone(), QueuedCPU: l.QueuedCpu})
	}
	ctx.Send(g.cfg.Raylet, view)
}

// nodeGone forgets a node that died or left: it leaves the view, and the
// work sent to it fails with NodeDiedError (owners retry tasks).
func (g *gateway) nodeGone(ctx actor.Context, node ids.NodeID, died bool) {
	if node == g.cfg.NodeID || g.dead.has(node) {
		return
	}
	g.markDead(node)
	delete(g.peers, node)
	g.fetch.setAddr(node, "")
	g.sendView(ctx)
	if died {
		g.cfg.Logger.Warn("cluster: node failed: declared dead", "node", node.Short())
	} else {
		g.cfg.Logger.Info("cluster: node left the cluster", "node", node.Short())
	}
	g.failIfDead(ctx, node)
	ctx.Send(g.cfg.Raylet, &raylet.NodeGone{Node: node})
	// The objects held here for owners on that node have nobody left to
	// release them.
	for _, w := range g.owners.forget(node) {
		ctx.Send(g.cfg.Store, &atollpb.ClientDisconnected{ClientId: w.Bytes()})
	}
	for id, nodes := range g.copies {
		if i := slices.Index(nodes, node); i >= 0 {
			if nodes = slices.Delete(nodes, i, i+1); len(nodes) == 0 {
				delete(g.copies, id)
			} else {
				g.copies[id] = nodes
			}
		}
	}
	for k, stack := range g.inbound {
		// Nobody to answer there.
		task := false
		if stack = slices.DeleteFunc(stack, func(a arrival) bool {
			if a.origin != node {
				return false
			}
			g.quota.release(a.origin, a.size)
			task = task || a.address == ""
			return true
		}); len(stack) == 0 {
			delete(g.inbound, k)
			delete(g.itemFailed, k)
			if task {
				// Nobody wants its result any more (the origin's owner
				// retries it elsewhere, or died with it): the raylet drops
				// it from its queues, or stops it, rather than hold it
				// outside the quota (a peer could otherwise fill a node by
				// forwarding tasks no node can run, then claiming to leave).
				// This attempt only: the owner may have sent a newer one
				// here since, from a live node (found by samples/chaos: a
				// retry cancelled when its first attempt's relay died).
				ctx.Send(g.cfg.Raylet, &atollpb.CancelTask{TaskId: k.task.Bytes(), OneAttempt: true, Attempt: k.attempt})
			}
		} else {
			g.inbound[k] = stack
		}
	}
	// Only the head tells the GCS (see partition.go): a node cut off from
	// the others declares them all dead, and must not be believed.
	gcsClient := g.cfg.GCS
	if gcsClient == nil || !g.cfg.Node.GetIsHead() {
		return
	}
	go func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = gcsClient.MarkNodeDead(c, node.Bytes())
		cancel()
	}()
}

// markDead remembers node as dead, forgetting the oldest dead nodes past
// the cap (and the nodes heard from with them).
func (g *gateway) markDead(node ids.NodeID) {
	g.dead.add(node)
	for g.dead.len() > g.cfg.MaxDeadNodes {
		old, _ := g.dead.popOldest()
		g.heard.remove(old)
	}
}

// failIfDead fails the work pending on node if it is dead.
func (g *gateway) failIfDead(ctx actor.Context, node ids.NodeID) {
	if !g.dead.has(node) {
		return
	}
	for k := range g.pending {
		for i := len(g.pending[k]) - 1; i >= 0; i-- {
			f := g.pending[k][i]
			if f.node != node {
				continue
			}
			err := &errs.NodeDiedError{NodeID: node.String(), TaskName: f.name, TaskID: k.task.String(), Message: "the node left the cluster"}
			// route deletes entry i; the entries below it keep their indices.
			g.route(ctx, k, i, &atollpb.TaskResult{TaskId: k.task.Bytes(), Attempt: k.attempt, Error: errs.ToProto(err), ActorCrashed: f.isCall})
		}
	}
}

// sizes reports the gateway's tables.
func (g *gateway) sizes() *atollpb.NodeStats {
	var pending, inbound int
	for _, s := range g.pending {
		pending += len(s)
	}
	for _, s := range g.inbound {
		inbound += len(s)
	}
	owners, ownerNodes := g.owners.sizes()
	return &atollpb.NodeStats{
		NodeId: g.cfg.NodeID.Bytes(), Peers: uint64(len(g.peers)), DeadNodes: uint64(g.dead.len()), MaxDeadNodes: uint64(g.cfg.MaxDeadNodes),
		HeardNodes: uint64(g.heard.len()), Owners: uint64(owners), MaxOwners: uint64(g.cfg.MaxOwners), OwnerNodes: uint64(ownerNodes),
		Pending: uint64(pending), Inbound: uint64(inbound), Copies: uint64(len(g.copies)), ForwardsLost: g.forwardsLost,
		ForwardsRefused: g.quota.refused, InboundBytes: uint64(g.quota.total.bytes),
	}
}
