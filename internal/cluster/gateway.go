package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/remote"
)

// Gateway is a started gateway: its actor, the object server and the
// membership member.
type Gateway struct {
	cfg       Config
	err       error // an invalid Config, reported by Start
	pid       *actor.PID
	fetch     *fetcher
	owners    *owners
	server    *remote.Server
	client    *remote.Client
	member    *membership.Member
	subs      []*nats.Subscription
	heard     *peerSet
	stopRep   chan struct{}
	repDone   chan struct{}
	statsBusy chan struct{} // one stats request served at a time
	ammBusy   chan struct{} // AMM requests served at once (ammConcurrency)
	replBusy  chan struct{} // AMM replications under way (replicateConcurrency)
	drain     drainState
	info      *atollpb.NodeInfo // as registered by Start (rejoin.go)
	once      sync.Once
	spawned   bool // the actor runs
	reporting bool // the report goroutine runs
	// freeSeq is the number of the last notice the node sent (the
	// Forwarder's FreeSeq, for its load reports).
	freeSeq *atomic.Uint64
}

// gatewayName is the gateway actor's name (so its PID is known before it
// is spawned: the raylet, spawned first, is given it).
const gatewayName = "gateway"

// New prepares a gateway: its PID and RayletConfig are valid at once, but
// nothing runs until Start. Spawn the raylet between the two, so that the
// gateway never sends to a raylet that is still being spawned.
func New(cfg Config) *Gateway {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.NodeIP == "" {
		cfg.NodeIP = "127.0.0.1"
	}
	if cfg.ReportInterval <= 0 {
		cfg.ReportInterval = 100 * time.Millisecond
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 256 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	err := cfg.withLimits()
	return &Gateway{drain: drainState{left: make(chan struct{})}, cfg: cfg, err: err, stopRep: make(chan struct{}), repDone: make(chan struct{}), statsBusy: make(chan struct{}, 1), ammBusy: make(chan struct{}, ammConcurrency),
		replBusy: make(chan struct{}, replicateConcurrency), heard: &peerSet{m: map[ids.NodeID]bool{}}, owners: newOwners(cfg.MaxOwners, cfg.Logger), pid: cfg.System.NewLocalPID(gatewayName),
		freeSeq: new(atomic.Uint64)}
}

// Start registers the node in the GCS, joins the gossip and starts the
// gateway actor; on failure it undoes what it started.
func (g *Gateway) Start() error {
	cfg := g.cfg
	ok := false
	defer func() {
		if !ok {
			g.Stop("failed to start")
		}
	}()
	if g.err != nil {
		return g.err
	}
	var err error
	key := cfg.transferKey()
	ccfg, sopts := remote.ClientConfig{Key: key, TLS: cfg.ClientTLS}, remote.ServerOptions{Key: key, TLS: cfg.ServerTLS}
	if cfg.Partition != nil {
		ccfg.Dialer, sopts.Admit = cfg.Partition, cfg.Partition.Admit
	}
	if g.client, err = remote.NewClient(ccfg); err != nil {
		return err
	}
	puller, err := remote.NewPuller(g.client, remote.PullerConfig{MaxInFlight: cfg.MaxInFlight})
	if err != nil {
		return err
	}
	g.fetch = &fetcher{self: cfg.NodeID, store: cfg.StoreClient, puller: puller, addrs: map[ids.NodeID]string{}, nc: cfg.Conn, prefix: cfg.Prefix, owners: g.owners,
		onPull: cfg.OnTransfer}
	addr := net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.TransferPort))
	if g.server, err = remote.ListenWith(addr, serve(cfg.StoreClient), sopts); err != nil {
		return fmt.Errorf("cluster: object transfer listener: %w", err)
	}
	if err := g.startActor(); err != nil {
		return err
	}
	if g.member, err = membership.Start(membership.Config{
		NodeID: cfg.NodeID, BindAddr: cfg.NodeIP, BindPort: cfg.GossipPort, FailureBudget: cfg.FailureBudget, SecretKey: cfg.gossipKey(),
		Partition: cfg.Partition, Logger: cfg.Logger, System: cfg.System, Events: g.pid,
	}); err != nil {
		return fmt.Errorf("cluster: gossip: %w", err)
	}
	info := proto.Clone(cfg.Node).(*atollpb.NodeInfo)
	info.NodeId, info.State = cfg.NodeID.Bytes(), atollpb.NodeState_NODE_ALIVE
	info.TransferAddress, info.GossipAddress = g.server.Addr(), g.member.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cfg.GCS.RegisterNode(ctx, info); err != nil {
		return fmt.Errorf("cluster: register node: %w", err)
	}
	g.info = info
	nodes, err := cfg.GCS.ListNodes(ctx)
	if err != nil {
		return fmt.Errorf("cluster: list nodes: %w", err)
	}
	var join []string
	for _, n := range nodes {
		if n.State == atollpb.NodeState_NODE_ALIVE && n.GossipAddress != "" && ids.MustFromBytes(n.NodeId) != cfg.NodeID {
			join = append(join, n.GossipAddress)
		}
	}
	if len(join) > 0 {
		if _, err := g.member.Join(join); err != nil {
			cfg.Logger.Warn("gossip join failed; the node still serves and retries through later joiners", "err", err)
		}
	}
	g.reporting = true
	go g.report(info)
	ok = true
	return nil
}

// startActor spawns the gateway actor and routes the node's subjects to
// it (Start does this once the transfer server listens; the forwarding
// tests run gateways with nothing else).
func (g *Gateway) startActor() error {
	if g.fetch == nil {
		g.fetch = &fetcher{self: g.cfg.NodeID, addrs: map[ids.NodeID]string{}, owners: g.owners}
	}
	gw := newGatewayActor(&g.cfg, g.fetch, g.heard, g.owners)
	gw.freeSeq = g.freeSeq
	opts := []actor.PropsOption{actors.RestartForever(g.cfg.Logger, gatewayName)}
	if g.cfg.Faults != nil {
		// A fault plan's rules for the gateway (actor: gateway) apply to
		// what it receives: load reports, lease confirmations, results.
		opts = append(opts, actor.WithReceiverMiddleware(g.cfg.Faults.ReceiverMiddleware()))
	}
	props := actor.PropsFromProducer(func() actor.Actor { return gw }, opts...)
	if _, err := g.cfg.System.Root.SpawnNamed(props, gatewayName); err != nil {
		return fmt.Errorf("cluster: start gateway: %w", err)
	}
	g.spawned = true
	return g.subscribe()
}

// WaitPeers waits until the gateway has heard the load report of every
// node the GCS lists alive (so the raylet's first placements see the whole
// cluster), or ctx ends.
func (g *Gateway) WaitPeers(ctx context.Context) error {
	nodes, err := g.cfg.GCS.ListNodes(ctx)
	if err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := 0
		for _, n := range nodes {
			id := ids.MustFromBytes(n.NodeId)
			if n.State == atollpb.NodeState_NODE_ALIVE && id != g.cfg.NodeID && !g.heard.has(id) {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %d live nodes not heard from: %w", missing, ctx.Err())
		case <-tick.C:
		}
	}
}

// peerSet is a goroutine-safe set of node ids.
type peerSet struct {
	mu sync.Mutex
	m  map[ids.NodeID]bool
}

func (s *peerSet) add(id ids.NodeID) {
	s.mu.Lock()
	s.m[id] = true
	s.mu.Unlock()
}

func (s *peerSet) has(id ids.NodeID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

func (s *peerSet) remove(id ids.NodeID) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

func (s *peerSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// PID is the gateway actor: the raylet's forwards go to it.
func (g *Gateway) PID() *actor.PID { return g.pid }

// TransferAddress is where this node serves its objects.
func (g *Gateway) TransferAddress() string { return g.server.Addr() }

// Fetch pulls refs held on other nodes into the local store.
func (g *Gateway) Fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	return g.fetch.Fetch(ctx, refs)
}

// Free drops the objects on every node (the owner freed them).
func (g *Gateway) Free(idList [][]byte) { g.free(idList, false) }

// Revive tells every node's store that freed objects are being rebuilt
// by their owner (FreeObjects.revived).
func (g *Gateway) Revive(idList [][]byte) { g.free(idList, true) }

// FreeStrays drops the copies on node only of objects that live on
// elsewhere: copies a late attempt stored there after their owner moved
// on (FreeObjects.stray_node).
func (g *Gateway) FreeStrays(node ids.NodeID, idList [][]byte) {
	g.stepFree(Free{Objects: idList, StrayOn: node})
}

// The gateway actor numbers the free, applies it to the local store and
// tells every node (forward_free.go).
func (g *Gateway) free(idList [][]byte, revived bool) {
	g.stepFree(Free{Objects: idList, Revived: revived})
}

// stepFree hands a free to the gateway actor, or, before the actor runs,
// deletes in the local store (a free of strays on another node is then
// dropped: before this gateway runs, no other node ran work from here).
func (g *Gateway) stepFree(ev Free) {
	if len(ev.Objects) == 0 {
		return
	}
	if !g.spawned {
		if ev.StrayOn.IsZero() || ev.StrayOn == g.cfg.NodeID {
			req := &atollpb.DeleteObjectsRequest{ObjectIds: ev.Objects, Revived: ev.Revived}
			if !ev.StrayOn.IsZero() {
				req.StrayNode = ev.StrayOn.Bytes()
			}
			g.cfg.System.Root.Send(g.cfg.Store, req)
		}
		return
	}
	g.cfg.System.Root.Send(g.pid, &freeRequest{ev: ev})
}

// Pulls reports the objects and bytes this node pulled from others.
func (g *Gateway) Pulls() (objects, bytes uint64) {
	return g.fetch.pulls.Load(), g.fetch.pulledBytes.Load()
}

// RayletConfig returns the raylet's cluster configuration, forwarding
// through this gateway.
func (g *Gateway) RayletConfig(threshold float64) *raylet.ClusterConfig {
	root, pid := g.cfg.System.Root, g.pid
	return g.borrowsConfig(&raylet.ClusterConfig{
		Forward: func(node ids.NodeID, spec *atollpb.TaskSpec, owner *actor.PID, hops int32) {
			root.Send(pid, &forwardTask{node: node, spec: spec, owner: owner, hops: hops})
		},
		CallActor: func(node ids.NodeID, address string, spec *atollpb.TaskSpec, caller *actor.PID) {
			root.Send(pid, &forwardCall{node: node, address: address, spec: spec, caller: caller})
		},
		Cancel: func(id ids.TaskID, nonRecursive bool) {
			root.Send(pid, &cancelForwarded{id: id, nonRecursive: nonRecursive})
		},
		GeneratorAck: func(ack *atollpb.GeneratorAck, hops int32) {
			root.Send(pid, &ackForwarded{ack: ack, hops: hops})
		},
		KillActor:       g.KillActor,
		SpreadThreshold: threshold,
	})
}

// KillActor asks every node to kill an actor (its host does). Safe for
// concurrent use.
func (g *Gateway) KillActor(m *atollpb.KillActor) {
	b, _ := proto.Marshal(m)
	if err := g.cfg.Conn.Publish(killSubject(g.cfg.Prefix), b); err != nil {
		g.cfg.Logger.Warn("cluster: publish actor kill", "err", err)
	}
}

// KillNode orders node to die at once, as if its machine failed (fault
// injection); it returns when the node acknowledged.
func (g *Gateway) KillNode(ctx context.Context, node ids.NodeID) error {
	if err := g.faultInjectionAllowed(ctx, "KillNode"); err != nil {
		return err
	}
	if _, err := g.cfg.Conn.RequestWithContext(ctx, nodeSubject(g.cfg.Prefix, node, "crash"), nil); err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return errs.NotFoundf("KillNode: no live node %s", node.Short())
		}
		return errs.Unavailablef("KillNode %s: %v", node.Short(), err)
	}
	return nil
}

// Flush waits until NATS has what this node published.
func (g *Gateway) Flush() { _ = g.cfg.Conn.FlushTimeout(2 * time.Second) }

// CallActor sends an actor call to a host on another node; the result
// goes to caller.
func (g *Gateway) CallActor(node ids.NodeID, address string, spec *atollpb.TaskSpec, caller *actor.PID) {
	g.cfg.System.Root.Send(g.pid, &forwardCall{node: node, address: address, spec: spec, caller: caller})
}

// OwnerExited tells the cluster that an owner process of this node (a
// worker or actor process) exited: every node forgets it and frees the
// objects it owned there. It never blocks (it posts to the gateway) and
// is a no-op on a nil Gateway, so a node's worker-death hook can call it
// whether or not the node is clustered. (Before Start, the notice is a
// dead letter: nobody can have recorded the owner yet.)
func (g *Gateway) OwnerExited(w ids.WorkerID) {
	if g == nil {
		return
	}
	g.cfg.System.Root.Send(g.pid, &ownerExited{worker: w})
}

// Stats returns the sizes of the node's bounded tables (gateway and
// raylet) and its Go heap, after a garbage collection if gc is set.
func (g *Gateway) Stats(ctx context.Context, gc bool) (*atollpb.NodeStats, error) {
	deadline := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	res, err := g.cfg.System.Root.RequestFuture(g.pid, &getSizes{}, deadline).Result()
	if err != nil {
		return nil, errs.Unavailablef("gateway stats: %v", err)
	}
	st := res.(*atollpb.NodeStats)
	if res, err := g.cfg.System.Root.RequestFuture(g.cfg.Raylet, &raylet.GetState{}, deadline).Result(); err == nil {
		if rs, ok := res.(*raylet.State); ok {
			st.HostedActors, st.Workers = uint64(rs.Actors), uint64(rs.Workers)
		}
	}
	if gc {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapAllocBytes, st.Goroutines = ms.HeapAlloc, uint64(runtime.NumGoroutine())
	return st, nil
}

// serveStats answers a stats request (atoll.node.<node>.stats), one at a
// time: a request arriving while one is served is dropped (its caller
// times out) rather than piling up goroutines.
func (g *Gateway) serveStats(m *nats.Msg) {
	select {
	case g.statsBusy <- struct{}{}:
	default:
		g.cfg.Logger.Debug("cluster: stats request dropped: one is being served")
		return
	}
	var req atollpb.NodeStatsRequest
	if err := proto.Unmarshal(m.Data, &req); err != nil {
		<-g.statsBusy
		g.cfg.Logger.Warn("cluster: undecodable stats request", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := g.Stats(ctx, req.Gc)
	cancel()
	// Free the slot before answering: a caller polling the stats sends
	// its next request as soon as it has this answer, and must not find
	// the slot still taken (its request would be dropped, unanswered).
	<-g.statsBusy
	if err != nil {
		g.cfg.Logger.Warn("cluster: stats", "err", err)
		return
	}
	b, _ := proto.Marshal(st)
	_ = m.Respond(b)
}

// markDeadTimeout bounds how long a leaving node waits for the GCS to
// record why it leaves.
const markDeadTimeout = 10 * time.Second

// Stop marks the node dead in the GCS as one that left, with reason
// (drained, when the head told a drained node to leave and reason is
// ""; else reason, or "stopped"), leaves the gossip gracefully and stops
// serving. The GCS hears first, before the last load report (marked
// leaving) and the gossip leave, so that the reason stands (the head
// marks a node whose leave it hears "left the cluster", and the first
// mark wins). Safe to call more than once.
func (g *Gateway) Stop(reason string) {
	g.once.Do(func() {
		if reason == "" {
			reason = "stopped"
			select {
			case <-g.Left():
				reason = "drained"
			default:
			}
		}
		if g.spawned && g.cfg.GCS != nil {
			// A loaded head may take seconds to write the mark through;
			// giving up early lets the leave below reach the head first
			// and the reason is lost.
			ctx, cancel := context.WithTimeout(context.Background(), markDeadTimeout)
			if err := g.cfg.GCS.MarkNodeDead(ctx, g.cfg.NodeID.Bytes(), true, reason); err != nil {
				g.cfg.Logger.Warn("cluster: could not record why this node leaves", "reason", reason, "err", err)
			}
			cancel()
		}
		// Only now the last load report, marked leaving: the head marks a
		// node it hears leave "left the cluster", and would otherwise race
		// the reason above.
		close(g.stopRep)
		if g.member != nil {
			_ = g.member.Leave(2 * time.Second)
		}
		for _, s := range g.subs {
			_ = s.Unsubscribe()
		}
		if g.reporting {
			<-g.repDone
		}
		if g.spawned {
			_ = g.cfg.System.Root.StopFuture(g.pid).Wait()
		}
		if g.member != nil {
			_ = g.member.Shutdown()
		}
		if g.server != nil {
			_ = g.server.Close()
		}
		if g.client != nil {
			_ = g.client.Close()
		}
		if g.fetch != nil && g.fetch.puller != nil {
			// Pulls write into the node's arena, which the node unmaps
			// once its gateway stopped.
			g.fetch.puller.Close()
		}
	})
}

// subscribe routes the node's subjects to the gateway actor. Bodies are
// decoded and validated in the callback (which never blocks): a message
// that does not decode or names malformed ids is logged and dropped, so
// nothing from the network can crash the gateway.
func (g *Gateway) subscribe() error {
	c, p, self := g.cfg, g.cfg.Prefix, g.cfg.NodeID
	root := c.System.Root
	route := func(kind, subject string, newMsg func() proto.Message) error {
		s, err := c.Conn.Subscribe(subject, func(m *nats.Msg) {
			v := newMsg()
			if err := proto.Unmarshal(m.Data, v); err != nil {
				c.Logger.Warn("cluster: undecodable message dropped", "subject", m.Subject, "err", err)
				return
			}
			if err := validate(v); err != nil {
				c.Logger.Warn("cluster: invalid message dropped", "subject", m.Subject, "err", err)
				return
			}
			if c.drop != nil && c.drop(kind, v) {
				return
			}
			root.Send(g.pid, v)
		})
		if err != nil {
			return fmt.Errorf("cluster: subscribe %s: %w", subject, err)
		}
		g.subs = append(g.subs, s)
		return nil
	}
	for _, r := range []struct {
		kind    string
		subject string
		newMsg  func() proto.Message
	}{
		{"task", nodeSubject(p, self, "task"), func() proto.Message { return &atollpb.ForwardTask{} }},
		{"call", nodeSubject(p, self, "call"), func() proto.Message { return &atollpb.ForwardActorCall{} }},
		{"result", nodeSubject(p, self, "result"), func() proto.Message { return &atollpb.ForwardedResult{} }},
		{"held", nodeSubject(p, self, "held"), func() proto.Message { return &atollpb.HeldWork{} }},
		{"cancel", nodeSubject(p, self, "cancel"), func() proto.Message { return &atollpb.ForwardCancel{} }},
		{"genack", nodeSubject(p, self, "genack"), func() proto.Message { return &atollpb.ForwardGeneratorAck{} }},
		{"copy", nodeSubject(p, self, "copy"), func() proto.Message { return &atollpb.ObjectCopies{} }},
		{"load", loadWildcard(p), func() proto.Message { return &atollpb.NodeLoad{} }},
		{"owners", ownersExitedSubject(p), func() proto.Message { return &atollpb.OwnersExited{} }},
		{"free", freeSubject(p), func() proto.Message { return &atollpb.FreeObjects{} }},
		{"free", nodeSubject(p, self, KindFree), func() proto.Message { return &atollpb.FreeObjects{} }},
		{"freerepair", nodeSubject(p, self, KindFreeRepair), func() proto.Message { return &atollpb.FreeRepair{} }},
	} {
		if err := route(r.kind, r.subject, r.newMsg); err != nil {
			return err
		}
	}
	s, err := c.Conn.Subscribe(nodeSubject(p, self, "stats"), func(m *nats.Msg) { go g.serveStats(m) })
	if err != nil {
		return fmt.Errorf("cluster: subscribe stats: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "crash"), func(m *nats.Msg) {
		// Fault injection: die like a failed machine. Worker processes
		// follow (they are started with a parent-death signal).
		c.Logger.Warn("cluster: killed by fault injection (KillNode)")
		_ = m.Respond(nil)
		_ = c.Conn.Flush()
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	})
	if err != nil {
		return fmt.Errorf("cluster: subscribe crash: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "partition"), g.servePartition)
	if err != nil {
		return fmt.Errorf("cluster: subscribe partition: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "faults"), g.serveFaults)
	if err != nil {
		return fmt.Errorf("cluster: subscribe faults: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "timeline"), func(m *nats.Msg) { go g.timeline(m) })
	if err != nil {
		return fmt.Errorf("cluster: subscribe timeline: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "objects"), func(m *nats.Msg) { g.serveAMM(m, g.listObjects) })
	if err != nil {
		return fmt.Errorf("cluster: subscribe objects: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "dropcopies"), func(m *nats.Msg) { g.serveAMM(m, g.dropCopies) })
	if err != nil {
		return fmt.Errorf("cluster: subscribe dropcopies: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "replicate"), g.serveReplicate)
	if err != nil {
		return fmt.Errorf("cluster: subscribe replicate: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "drain"), g.serveDrain)
	if err != nil {
		return fmt.Errorf("cluster: subscribe drain: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "leave"), g.serveLeave)
	if err != nil {
		return fmt.Errorf("cluster: subscribe leave: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(borrowsSubject(p, self), g.serveBorrows)
	if err != nil {
		return fmt.Errorf("cluster: subscribe borrows: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(nodeSubject(p, self, "locate"), func(m *nats.Msg) { root.Send(g.pid, &locate{msg: m}) })
	if err != nil {
		return fmt.Errorf("cluster: subscribe locate: %w", err)
	}
	g.subs = append(g.subs, s)
	s, err = c.Conn.Subscribe(killSubject(p), func(m *nats.Msg) {
		var k atollpb.KillActor
		if proto.Unmarshal(m.Data, &k) == nil && validate(&k) == nil {
			root.Send(c.Raylet, &raylet.KillHostedActor{Msg: &k})
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: subscribe kill: %w", err)
	}
	g.subs = append(g.subs, s)
	return c.Conn.FlushTimeout(10 * time.Second)
}

// timelineErrorBudget bounds the bytes of errors and stacks one timeline
// reply carries (the rest of a reply is at most ~100 bytes per event).
const timelineErrorBudget = 256 << 10

// timeline answers a timeline request with the raylet's recent task
// attempts.
func (g *Gateway) timeline(m *nats.Msg) {
	out := &atollpb.TaskEvents{NodeId: g.cfg.NodeID.Bytes()}
	if res, err := g.cfg.System.Root.RequestFuture(g.cfg.Raylet, &raylet.GetTimeline{}, 5*time.Second).Result(); err == nil {
		events := res.([]raylet.TaskEvent)
		// The errors of the newest failed attempts, within a budget: the
		// reply must stay under NATS's largest message.
		withError := make([]bool, len(events))
		for i, budget := len(events)-1, timelineErrorBudget; i >= 0 && budget > 0; i-- {
			if n := len(events[i].Error) + len(events[i].RemoteStack); n > 0 && n <= budget {
				withError[i], budget = true, budget-n
			}
		}
		for i, e := range events {
			ev := &atollpb.TaskEvent{TaskId: e.TaskID.Bytes(), Name: e.Name, WorkerId: e.Worker.Bytes(),
				StartUnixUs: e.Start.UnixMicro(), EndUnixUs: e.End.UnixMicro(), Failed: e.Failed, Kind: e.Kind, Bytes: e.Bytes, Detail: e.Detail}
			if withError[i] {
				ev.Error, ev.RemoteStack = e.Error, e.RemoteStack
			}
			if !e.JobID.IsZero() {
				ev.JobId = e.JobID.Bytes()
			}
			if e.TraceID.IsValid() {
				ev.TraceId = e.TraceID.String()
			}
			out.Events = append(out.Events, ev)
		}
	}
	b, _ := proto.Marshal(out)
	// Keep the newest events that fit in one NATS message.
	for limit := g.cfg.Conn.MaxPayload(); limit > 0 && int64(len(b)) > limit && len(out.Events) > 0; b, _ = proto.Marshal(out) {
		out.Events = out.Events[len(out.Events)/2:]
	}
	_ = m.Respond(b)
}
