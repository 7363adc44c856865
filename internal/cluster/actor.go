package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
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
	// freeRequest: an owner of this node freed (or revives) objects.
	freeRequest struct{ ev Free }
	// getSizes asks the gateway for the sizes of its tables (a
	// *atollpb.NodeStats with the gateway's fields set).
	getSizes struct{}
	// getCounters asks for the lease protocol's counters (tests).
	getCounters   struct{}
	leaseCounters struct{ renewals, sweeps, lost, restarts uint64 }
)

// gateway is the actor half of a Gateway: the shell around the node's
// Forwarder. It turns what it receives (the raylet's forwards, the
// messages NATS callbacks validated and posted, membership events, its
// lease timer) into the Forwarder's events, and carries out the effects
// each step produces, in order, before it takes its next message. All
// fields are owned by its goroutine, except the fetcher's address table
// (the fetcher is shared with worker proxies and locks it), heard (read
// by WaitPeers) and the Forwarder's owners table (shared with the
// fetcher).
type gateway struct {
	cfg   *Config
	fetch *fetcher
	heard *peerSet
	core  *Forwarder
	// tick fires the next leaseTick.
	tick *time.Timer
	// restarts counts the actor's restarts (a panic); its state survives
	// them (the producer returns this same gateway).
	restarts uint64
	// freeSeq mirrors the Forwarder's FreeSeq for the load reports.
	freeSeq *atomic.Uint64
	// reports is the context of the reports of deaths to the GCS in
	// flight; stopping the actor cancels it (stopReports), so none
	// outlives the gateway.
	reports     context.Context
	stopReports context.CancelFunc
}

func newGatewayActor(cfg *Config, fetch *fetcher, heard *peerSet, own *owners) *gateway {
	core := newForwarder(ForwarderConfig{Self: cfg.NodeID, IsHead: cfg.Node.GetIsHead(), ForwardLease: cfg.ForwardLease,
		StrangerGrace: cfg.StrangerGrace, MaxDeadNodes: cfg.MaxDeadNodes, MaxOwners: cfg.MaxOwners,
		MaxForwardedPerOrigin: cfg.MaxForwardedPerOrigin, MaxForwarded: cfg.MaxForwarded,
		MaxForwardedBytesPerOrigin: cfg.MaxForwardedBytesPerOrigin, MaxForwardedBytes: cfg.MaxForwardedBytes}, own)
	return &gateway{cfg: cfg, fetch: fetch, heard: heard, core: core}
}

// Receive implements actor.Actor.
func (g *gateway) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if g.reports == nil {
			g.reports, g.stopReports = context.WithCancel(context.Background())
		}
		g.core.SetMaxPayload(g.cfg.Conn.MaxPayload())
		g.armTick(ctx)
	case *actor.Stopping, *actor.Restarting:
		if g.tick != nil {
			g.tick.Stop()
		}
		if _, ok := m.(*actor.Restarting); ok {
			g.restarts++
		} else if g.stopReports != nil {
			g.stopReports()
		}
	case ReportAnswered:
		g.step(ctx, m)
	case *leaseTick:
		g.core.SetMaxPayload(g.cfg.Conn.MaxPayload())
		g.step(ctx, LeaseTick{})
		g.armTick(ctx)
	case *forwardTask:
		// The raylet spilling back work forwarded here names the gateway
		// as its owner: the result goes back the way the work came.
		relay := m.owner != nil && m.owner.Equal(ctx.Self())
		g.step(ctx, SendTask{Node: m.node, Spec: m.spec, Owner: m.owner, Relay: relay, Hops: m.hops})
	case *forwardCall:
		g.step(ctx, SendCall{Node: m.node, Address: m.address, Spec: m.spec, Caller: m.caller})
	case *cancelForwarded:
		g.step(ctx, CancelSent{Task: m.id, NonRecursive: m.nonRecursive})
	case *ackForwarded:
		g.step(ctx, PassAck{Ack: m.ack, Hops: m.hops})
	case *atollpb.TaskResult:
		g.step(ctx, LocalResult{Result: m})
	case *actor.DeadLetterResponse:
		// A call forwarded here found no host at its address: the actor is
		// gone. Without an answer its caller would wait (and this node
		// would confirm it) forever.
		if m.Target != nil {
			g.step(ctx, NoHost{Address: m.Target.Id})
		}
	case *atollpb.ForwardTask, *atollpb.ForwardActorCall, *atollpb.ForwardCancel, *atollpb.ForwardedResult,
		*atollpb.ForwardGeneratorAck, *atollpb.HeldWork, *atollpb.OwnersExited, *atollpb.NodeLoad,
		*atollpb.ObjectCopies, *atollpb.FreeObjects, *atollpb.FreeRepair:
		// Validated by the NATS callback that posted it (subscribe).
		g.step(ctx, Received{Msg: m.(proto.Message)})
	case *ownerExited:
		g.step(ctx, OwnerExited{Worker: m.worker})
	case *freeRequest:
		g.step(ctx, m.ev)
	case *locate:
		g.locate(m.msg)
	case *getSizes:
		ctx.Respond(g.sizes())
	case *getCounters:
		st := g.core.Stats()
		ctx.Respond(leaseCounters{renewals: st.Renewals, sweeps: st.Sweeps, lost: st.ForwardsLost, restarts: g.restarts})
	case membership.NodeLeft:
		g.step(ctx, PeerGone{Node: m.ID, Died: m.Dead})
	case membership.NodeJoined:
		g.step(ctx, PeerJoined{Node: m.ID})
	case membership.NodeUpdated:
		g.step(ctx, PeerJoined{Node: m.ID})
	}
}

// step applies ev to the Forwarder, stamped with the time now, and
// carries out its effects.
func (g *gateway) step(ctx actor.Context, ev Event) {
	now := time.Now()
	g.core.Step(now, ev)
	queue := g.core.TakeEffects()
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		if failed, ok := g.apply(ctx, e); ok {
			// What the failure brings comes first, as if the publish had
			// returned it.
			g.core.Step(now, failed)
			queue = append(g.core.TakeEffects(), queue...)
		}
	}
	if g.freeSeq != nil {
		g.freeSeq.Store(g.core.FreeSeq())
	}
}

// apply carries out one effect; a Publish that could not be sent and
// wants to know returns the event that says so.
func (g *gateway) apply(ctx actor.Context, e Effect) (PublishFailed, bool) {
	switch e := e.(type) {
	case Publish:
		if err := g.publish(e.Subject(g.cfg.Prefix), e.Msg); err != nil && e.Unsent != UnsentIgnored {
			return PublishFailed{Publish: e, Err: err}, true
		}
	case Deliver:
		ctx.Send(e.To, e.Result)
	case Submit:
		ctx.Request(g.cfg.Raylet, &atollpb.SubmitTask{Spec: e.Spec, Forwarded: true, Hops: e.Hops})
	case PushCall:
		ctx.Request(ctx.ActorSystem().NewLocalPID(e.Address), &atollpb.PushTask{Spec: e.Spec})
	case ToRaylet:
		ctx.Send(g.cfg.Raylet, e.Msg)
	case ToStore:
		ctx.Send(g.cfg.Store, e.Msg)
	case PeerHeard:
		g.fetch.setAddr(e.Node, e.TransferAddress)
		g.heard.add(e.Node)
	case PeerLost:
		g.fetch.setAddr(e.Node, "")
	case PeerForgotten:
		g.heard.remove(e.Node)
	case ReportDead:
		// The answer comes back as ReportAnswered: the Forwarder sends
		// the report again while the GCS answers UNAVAILABLE.
		root, self := ctx.ActorSystem().Root, ctx.Self()
		gcsClient, base := g.cfg.GCS, g.reports
		if gcsClient == nil || base == nil {
			root.Send(self, ReportAnswered{Node: e.Node}) // nobody to tell
			break
		}
		go func() {
			c, cancel := context.WithTimeout(base, markDeadTimeout)
			err := gcsClient.MarkNodeDead(c, e.Node.Bytes(), e.Left, e.Reason)
			cancel()
			if base.Err() == nil {
				root.Send(self, ReportAnswered{Node: e.Node, Err: err})
			}
		}()
	case Log:
		g.cfg.Logger.Log(context.Background(), e.Level, e.Msg, e.Args...)
	}
	return PublishFailed{}, false
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
			return errTooLarge(int64(len(b)), limit)
		}
		err = conn.Publish(subject, b)
	}
	if err != nil {
		return errs.Unavailablef("control plane: %v", err)
	}
	return nil
}

// locate answers a request for the copies of an object this node owns.
func (g *gateway) locate(msg *nats.Msg) {
	id, err := ids.ObjectIDFromBytes(msg.Data)
	if err != nil {
		return
	}
	reply := &atollpb.ObjectCopies{ObjectId: id.Bytes()}
	for _, n := range g.core.Copies(id) {
		reply.NodeIds = append(reply.NodeIds, n.Bytes())
	}
	b, _ := proto.Marshal(reply)
	_ = msg.Respond(b)
}

// sizes reports the gateway's tables.
func (g *gateway) sizes() *atollpb.NodeStats {
	st := g.core.Stats()
	owners, ownerNodes := g.core.owners.sizes()
	return &atollpb.NodeStats{
		NodeId: g.cfg.NodeID.Bytes(), Peers: uint64(st.Peers), DeadNodes: uint64(st.DeadNodes), MaxDeadNodes: uint64(g.cfg.MaxDeadNodes),
		HeardNodes: uint64(g.heard.len()), Owners: uint64(owners), MaxOwners: uint64(g.cfg.MaxOwners), OwnerNodes: uint64(ownerNodes),
		Pending: uint64(st.Pending), Inbound: uint64(st.Inbound), Copies: uint64(st.Copies), ForwardsLost: st.ForwardsLost,
		ForwardsRefused: st.ForwardsRefused, InboundBytes: uint64(st.InboundBytes),
	}
}
