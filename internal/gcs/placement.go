package gcs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/placement"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The placement actor: the shell of placement.Manager on the head. It
// serves the placement-group requests (PlacementSubject, and its reads on
// PlacementReadSubject), keeps the groups in the KV bucket <prefix>_pgs,
// follows the nodes (the GCS's node events, their load reports), sends
// the two-phase commit's steps to the nodes (<prefix>.node.<id>.bundles,
// answers on an inbox of its own) and publishes removals on
// PlacementEventsSubject, which every node follows (a removed group's
// tasks waiting there fail). It reloads its groups when it restarts.
//
// Writes to the bucket are asynchronous JetStream publishes of a group's
// entry, in order on one connection (a removed group's entry too, until
// the Manager forgets it: then it is purged), so the actor never waits on
// the disk: a creation or a removal is answered once JetStream acked its
// entry, and a creation whose entry could not be stored is removed again
// and answered with the error.

// PlacementConfig configures the placement actor.
type PlacementConfig struct {
	// Conn is the head's NATS connection (JetStream on its account).
	// Required.
	Conn *nats.Conn
	// Prefix as Config.Prefix.
	Prefix string
	// RequestTimeout bounds each JetStream operation and the start's
	// request for the node list. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// BucketBytes is the MaxBytes of the groups' bucket. Default
	// DefaultPlacementBucketBytes.
	BucketBytes int
	// Tick is how often the Manager's timers are looked at (steps past
	// their deadline, pending groups tried again, waits that expire).
	// Default 100 ms.
	Tick time.Duration
	// Manager configures the placement.Manager (its Logger defaults to
	// Logger).
	Manager placement.Config
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// DefaultPlacementBucketBytes is the groups' bucket's MaxBytes: an entry
// is a few hundred bytes, so some 100,000 groups.
const DefaultPlacementBucketBytes = 64 << 20

// maxWait bounds one WaitPlacementGroup (the client asks again).
const maxWait = 30 * time.Second

// maxWaiters bounds the waits held at once.
const maxWaiters = 65536

func (c PlacementConfig) withDefaults() (PlacementConfig, error) {
	if c.Conn == nil {
		return c, errors.New("gcs: PlacementConfig.Conn is required")
	}
	p, err := checkPrefix(c.Prefix)
	if err != nil {
		return c, err
	}
	c.Prefix = p
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.BucketBytes <= 0 {
		c.BucketBytes = DefaultPlacementBucketBytes
	}
	if c.Tick <= 0 {
		c.Tick = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Manager.Logger == nil {
		c.Manager.Logger = c.Logger
	}
	return c, nil
}

// PlacementSubject is where placement-group requests go (GcsRequest
// protos with a placement-group op).
func PlacementSubject(prefix string) string { return prefix + ".gcs.v1.pg" }

// PlacementReadSubject is where the requests that only read the groups
// may also go (the reader role's).
func PlacementReadSubject(prefix string) string { return prefix + ".gcs.v1.pg.read" }

// PlacementEventsSubject carries a PlacementGroupInfo after every change
// of a group.
func PlacementEventsSubject(prefix string) string { return prefix + ".events.pg" }

// BundlesSubject is where node takes the two-phase commit's steps (a
// BundleOp, answered with a BundleOpReply).
func BundlesSubject(prefix string, node ids.NodeID) string {
	return prefix + ".node." + node.String() + ".bundles"
}

func placementBucket(prefix string) string { return prefix + "_pgs" }

// AutoscalerSubject is where the head's autoscaler takes its requests
// (GcsRequest with request_resources).
func AutoscalerSubject(prefix string) string { return prefix + ".autoscaler.v1" }

func isRequestResources(req *atollpb.GcsRequest) bool {
	_, ok := req.Op.(*atollpb.GcsRequest_RequestResources)
	return ok
}

// placementOp tells whether req is a placement-group request, and
// whether it only reads.
func placementOp(req *atollpb.GcsRequest) (pg, read bool) {
	switch req.Op.(type) {
	case *atollpb.GcsRequest_CreatePlacementGroup, *atollpb.GcsRequest_RemovePlacementGroup, *atollpb.GcsRequest_WaitPlacementGroup:
		return true, false
	case *atollpb.GcsRequest_GetPlacementGroup, *atollpb.GcsRequest_ListPlacementGroups:
		return true, true
	}
	return false, false
}

// NewPlacementProps validates cfg and returns the props of the placement
// actor. Spawn it on the head under a supervisor that restarts it: it
// reloads its groups.
func NewPlacementProps(cfg PlacementConfig) (*actor.Props, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return &placementServer{cfg: cfg} }), nil
}

// placementServer is the placement actor; it alone owns the Manager.
type placementServer struct {
	cfg     PlacementConfig
	m       *placement.Manager
	kv      jetstream.KeyValue
	stream  jetstream.Stream
	subs    []*nats.Subscription
	inbox   string
	js      nats.JetStreamContext
	acks    chan pendingWrite
	root    *actor.RootContext
	self    *actor.PID
	alive   map[ids.NodeID]bool
	dead    *fifoSet
	waiters map[ids.ID16][]waiter
	nwait   int
	stop    chan struct{}
	backoff time.Duration
}

type waiter struct {
	reply    string
	deadline time.Time
}

// Messages from the NATS callbacks and the ticker.
type (
	pgRequest struct {
		read  bool
		data  []byte
		reply string
	}
	pgNodeEvent   struct{ info *atollpb.NodeInfo }
	pgLoad        struct{ load *atollpb.NodeLoad }
	pgBundleReply struct {
		node  ids.NodeID
		reply *atollpb.BundleOpReply
		err   error
	}
	pgTick    struct{}
	pgWritten struct {
		done func(error)
		err  error
	}
)

// Receive implements actor.Actor.
func (s *placementServer) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.ReceiveTimeout:
		if s.m == nil {
			s.start(ctx)
		}
	case *actor.Stopping, *actor.Restarting:
		s.shutdown()
	}
	if s.m == nil {
		return
	}
	now := time.Now()
	switch m := ctx.Message().(type) {
	case *pgRequest:
		s.handle(now, m)
	case *pgNodeEvent:
		s.nodeEvent(now, m.info)
	case *pgLoad:
		s.load(now, m.load)
	case *pgBundleReply:
		refused := m.reply.GetRefused()
		err := m.err
		if e := m.reply.GetError(); e != nil && err == nil {
			err = errs.FromProto(e)
		}
		s.m.Reply(now, m.node, m.reply.GetTxn(), refused, err)
	case *pgTick:
		s.m.Tick(now)
		s.expireWaiters(now)
	case *pgWritten:
		m.done(m.err)
	}
	s.apply()
}

// start opens the bucket, reloads the groups, follows the nodes and
// serves; a failure is retried after a growing backoff.
func (s *placementServer) start(ctx actor.Context) {
	if err := s.open(ctx); err != nil {
		s.shutdown()
		s.m = nil
		if s.backoff == 0 {
			s.backoff = firstRetryBackoff
		}
		s.cfg.Logger.Warn("placement: start failed; retrying", "err", err, "retry_in", s.backoff)
		ctx.SetReceiveTimeout(s.backoff)
		s.backoff = min(2*s.backoff, 5*time.Second)
		return
	}
	ctx.CancelReceiveTimeout()
	s.backoff = 0
	live, removed, _ := s.m.Sizes()
	s.cfg.Logger.Debug("placement: serving", "subject", PlacementSubject(s.cfg.Prefix), "groups", live, "removed", removed)
}

func (s *placementServer) open(ctx actor.Context) error {
	c, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	js, err := jetstream.New(s.cfg.Conn)
	if err != nil {
		return err
	}
	name := placementBucket(s.cfg.Prefix)
	if s.kv, err = js.CreateOrUpdateKeyValue(c, jetstream.KeyValueConfig{Bucket: name, Description: "atoll GCS placement group table",
		History: 1, Storage: jetstream.FileStorage, MaxBytes: int64(s.cfg.BucketBytes), MaxValueSize: DefaultMaxEntryBytes}); err != nil {
		return fmt.Errorf("placement: bucket %s: %w", name, err)
	}
	if s.stream, err = js.Stream(c, "KV_"+name); err != nil {
		return fmt.Errorf("placement: bucket %s: %w", name, err)
	}
	if s.js, err = s.cfg.Conn.JetStream(nats.PublishAsyncMaxPending(1 << 16)); err != nil {
		return fmt.Errorf("placement: jetstream: %w", err)
	}
	var infos []*atollpb.PlacementGroupInfo
	err = loadBucket(c, s.kv, s.cfg.Logger, func(k string, b []byte) error {
		info := &atollpb.PlacementGroupInfo{}
		if err := decodeEntry(k, b, info, "placement group", info.GetPlacementGroupId); err != nil {
			return err
		}
		infos = append(infos, info)
		return nil
	})
	if err != nil {
		return err
	}
	s.m = placement.New(s.cfg.Manager)
	now := time.Now()
	s.m.Restore(now, infos)
	s.alive, s.dead, s.waiters = map[ids.NodeID]bool{}, newFIFOSet(4096), map[ids.ID16][]waiter{}

	root, self := ctx.ActorSystem().Root, ctx.Self()
	s.root, s.self = root, self
	send := func(m any) { root.Send(self, m) }
	s.inbox = s.cfg.Conn.NewInbox()
	p := s.cfg.Prefix
	subscribe := func(subject, queue string, cb nats.MsgHandler) error {
		var sub *nats.Subscription
		var err error
		if queue != "" {
			sub, err = s.cfg.Conn.QueueSubscribe(subject, queue, cb)
		} else {
			sub, err = s.cfg.Conn.Subscribe(subject, cb)
		}
		if err == nil {
			s.subs = append(s.subs, sub)
		}
		return err
	}
	for _, sub := range []struct {
		subject, queue string
		cb             nats.MsgHandler
	}{
		{PlacementSubject(p), QueueGroup, func(m *nats.Msg) { send(&pgRequest{data: m.Data, reply: m.Reply}) }},
		{PlacementReadSubject(p), QueueGroup, func(m *nats.Msg) { send(&pgRequest{read: true, data: m.Data, reply: m.Reply}) }},
		{NodeEventsSubject(p), "", func(m *nats.Msg) {
			info := &atollpb.NodeInfo{}
			if proto.Unmarshal(m.Data, info) == nil && len(info.NodeId) == ids.Len16 {
				send(&pgNodeEvent{info: info})
			}
		}},
		{p + ".load.*", "", func(m *nats.Msg) {
			load := &atollpb.NodeLoad{}
			if proto.Unmarshal(m.Data, load) == nil && len(load.NodeId) == ids.Len16 {
				send(&pgLoad{load: load})
			}
		}},
		{s.inbox + ".*", "", func(m *nats.Msg) {
			node, err := ids.FromHex(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
			if err != nil {
				return
			}
			if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
				send(&pgBundleReply{node: node, err: errs.Unavailablef("node %s does not answer (dead or not in the cluster)", node.Short())})
				return
			}
			reply := &atollpb.BundleOpReply{}
			if err := proto.Unmarshal(m.Data, reply); err != nil {
				send(&pgBundleReply{node: node, err: errs.Unavailablef("node %s: undecodable answer", node.Short())})
				return
			}
			send(&pgBundleReply{node: node, reply: reply})
		}},
	} {
		if err := subscribe(sub.subject, sub.queue, sub.cb); err != nil {
			return err
		}
	}
	if err := s.cfg.Conn.FlushTimeout(s.cfg.RequestTimeout); err != nil {
		s.cfg.Logger.Warn("placement: flush after subscribe", "err", err)
	}
	// The nodes the GCS knows, after subscribing to their events (an
	// event in between is applied twice, which changes nothing).
	nodes, err := NewClient(s.cfg.Conn, ClientOptions{Prefix: p, WaitForServer: true, Timeout: s.cfg.RequestTimeout}).ListNodes(c)
	if err != nil {
		return fmt.Errorf("placement: list the nodes: %w", err)
	}
	for _, n := range nodes {
		s.nodeEvent(now, n)
	}
	s.m.Synced(now)
	s.stop = make(chan struct{})
	s.acks = make(chan pendingWrite, maxPendingWrites)
	go s.tick(root, self, s.stop)
	go ackLoop(root, self, s.acks, s.stop, s.cfg.RequestTimeout)
	return nil
}

// tick posts pgTick every Tick until stop closes.
func (s *placementServer) tick(root *actor.RootContext, self *actor.PID, stop chan struct{}) {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			root.Send(self, &pgTick{})
		case <-stop:
			return
		}
	}
}

// shutdown unsubscribes and stops the ticker; waiters get no answer (the
// client asks again).
func (s *placementServer) shutdown() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
}

func (s *placementServer) nodeEvent(now time.Time, info *atollpb.NodeInfo) {
	id, err := ids.FromBytes(info.GetNodeId())
	if err != nil {
		return
	}
	if info.GetState() == atollpb.NodeState_NODE_DEAD {
		if s.alive[id] || !s.dead.has(id) {
			delete(s.alive, id)
			s.dead.add(id)
			s.m.NodeDown(now, id, info.GetLeft())
		}
		return
	}
	if s.dead.has(id) {
		return
	}
	s.alive[id] = true
	s.m.NodeUp(now, id, raylet.Resources(info.GetResources()), nil, false, nil)
}

func (s *placementServer) load(now time.Time, l *atollpb.NodeLoad) {
	id := ids.MustFromBytes(l.NodeId)
	if !s.alive[id] || l.Leaving || l.Total == nil {
		return // the GCS's events say who lives
	}
	held := l.Bundles
	if held == nil {
		held = []*atollpb.BundleHeld{}
	}
	s.m.NodeUp(now, id, raylet.Resources(l.Total), raylet.Resources(l.Available), l.Draining, held)
	s.m.Waiting(now, id, raylet.GroupsWaiting(l.Demands))
}

// handle serves one request.
func (s *placementServer) handle(now time.Time, r *pgRequest) {
	req := &atollpb.GcsRequest{}
	if err := proto.Unmarshal(r.data, req); err != nil {
		s.respond(r.reply, errorReply(errs.Invalidf("placement: undecodable request: %v", err)))
		return
	}
	pg, read := placementOp(req)
	switch {
	case !pg:
		s.respond(r.reply, errorReply(errs.Invalidf("placement: %s is not a placement-group request", opName(req))))
		return
	case r.read && !read:
		s.respond(r.reply, errorReply(errs.PermissionDeniedf("placement: %s changes the groups; it is not served on %s", opName(req), PlacementReadSubject(s.cfg.Prefix))))
		return
	}
	reply := func(infos ...*atollpb.PlacementGroupInfo) {
		s.respond(r.reply, &atollpb.GcsReply{PlacementGroups: infos})
	}
	switch op := req.Op.(type) {
	case *atollpb.GcsRequest_CreatePlacementGroup:
		next, err := s.m.CheckCreate(now, op.CreatePlacementGroup)
		if err != nil {
			s.respond(r.reply, errorReply(err))
			return
		}
		id := ids.MustFromBytes(op.CreatePlacementGroup.PlacementGroupId)
		if next == nil {
			reply(s.m.Group(id))
			return
		}
		s.m.Create(now, next)
		s.write(next, func(err error) {
			if err != nil {
				s.m.Remove(time.Now(), id, "its entry could not be stored: "+err.Error())
				s.respond(r.reply, errorReply(err))
				return
			}
			reply(s.m.Group(id))
		})
	case *atollpb.GcsRequest_RemovePlacementGroup:
		id, err := ids.FromBytes(op.RemovePlacementGroup)
		if err != nil {
			s.respond(r.reply, errorReply(errs.Invalidf("placement: malformed group id")))
			return
		}
		switch err := s.m.CheckRemove(id); {
		case errors.Is(err, placement.ErrAlreadyRemoved):
			reply(s.m.Group(id))
		case err != nil:
			s.respond(r.reply, errorReply(err))
		default:
			s.m.Remove(now, id, "removed")
			info := s.m.Group(id)
			s.write(info, func(err error) {
				if err != nil {
					s.respond(r.reply, errorReply(err))
					return
				}
				reply(info)
			})
		}
	case *atollpb.GcsRequest_GetPlacementGroup:
		info, err := s.m.Lookup(op.GetPlacementGroup)
		if err != nil {
			s.respond(r.reply, errorReply(err))
			return
		}
		reply(info)
	case *atollpb.GcsRequest_ListPlacementGroups:
		reply(s.m.List()...)
	case *atollpb.GcsRequest_WaitPlacementGroup:
		w := op.WaitPlacementGroup
		info, err := s.m.ByID(w.GetPlacementGroupId())
		switch {
		case err != nil:
			s.respond(r.reply, errorReply(err))
		case placement.Settled(info) || w.GetTimeoutMs() <= 0 || r.reply == "":
			reply(info)
		case s.nwait >= maxWaiters:
			reply(info) // the client asks again
		default:
			wait := min(time.Duration(w.GetTimeoutMs())*time.Millisecond, maxWait)
			id := ids.MustFromBytes(info.PlacementGroupId)
			s.waiters[id] = append(s.waiters[id], waiter{reply: r.reply, deadline: now.Add(wait)})
			s.nwait++
		}
	}
}

// apply carries out the Manager's effects.
func (s *placementServer) apply() {
	for _, e := range s.m.Effects() {
		switch e := e.(type) {
		case placement.Send:
			b, err := proto.Marshal(e.Op)
			if err == nil {
				err = s.cfg.Conn.PublishRequest(BundlesSubject(s.cfg.Prefix, e.Node), s.inbox+"."+e.Node.String(), b)
			}
			if err != nil && e.Op.Kind != atollpb.BundleOp_RELEASE {
				s.m.Reply(time.Now(), e.Node, e.Op.Txn, "", errs.Unavailablef("send to node %s: %v", e.Node.Short(), err))
			}
		case placement.Persist:
			info := e.Info
			s.write(info, func(err error) {
				if err != nil {
					// The nodes' reports rebuild the placement after a restart.
					s.cfg.Logger.Warn("placement: persisting a group failed", "group", fmt.Sprintf("%x", info.PlacementGroupId), "err", err)
				}
			})
		case placement.Forget:
			go func(id ids.ID16) { // the key's last operation: nothing to order it with
				if err := s.purge(id); err != nil {
					s.cfg.Logger.Warn("placement: purging a forgotten group failed; purged again at the next start", "err", err)
				}
			}(e.ID)
		case placement.Notify:
			// Published to every node, as the removal was: the others
			// know it already and change nothing.
			if b, err := proto.Marshal(e.Info); err == nil {
				_ = s.cfg.Conn.Publish(PlacementEventsSubject(s.cfg.Prefix), b)
			}
		case placement.Changed:
			if e.Info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
				if b, err := proto.Marshal(e.Info); err == nil {
					_ = s.cfg.Conn.Publish(PlacementEventsSubject(s.cfg.Prefix), b)
				}
			}
			if placement.Settled(e.Info) {
				id := ids.MustFromBytes(e.Info.PlacementGroupId)
				for _, w := range s.waiters[id] {
					s.respond(w.reply, &atollpb.GcsReply{PlacementGroups: []*atollpb.PlacementGroupInfo{e.Info}})
				}
				s.nwait -= len(s.waiters[id])
				delete(s.waiters, id)
			}
		}
	}
}

// expireWaiters answers the waits past their deadline with the group as
// it is.
func (s *placementServer) expireWaiters(now time.Time) {
	for id, ws := range s.waiters {
		kept := ws[:0]
		for _, w := range ws {
			if now.Before(w.deadline) {
				kept = append(kept, w)
				continue
			}
			s.nwait--
			if info := s.m.Group(id); info != nil {
				s.respond(w.reply, &atollpb.GcsReply{PlacementGroups: []*atollpb.PlacementGroupInfo{info}})
			} else {
				s.respond(w.reply, errorReply(errs.NotFoundf("placement group %s not found", id.Short())))
			}
		}
		if len(kept) == 0 {
			delete(s.waiters, id)
		} else {
			s.waiters[id] = kept
		}
	}
}

func (s *placementServer) respond(to string, reply *atollpb.GcsReply) {
	respond(s.cfg.Conn, s.cfg.Logger, "placement", to, reply)
}

// fifoSet is a bounded set, oldest forgotten first.
type fifoSet struct {
	set   map[ids.ID16]bool
	order []ids.ID16
	cap   int
}

func newFIFOSet(n int) *fifoSet { return &fifoSet{set: map[ids.ID16]bool{}, cap: n} }

func (f *fifoSet) has(id ids.ID16) bool { return f.set[id] }

func (f *fifoSet) add(id ids.ID16) {
	if f.set[id] {
		return
	}
	f.set[id] = true
	f.order = append(f.order, id)
	if len(f.order) > f.cap {
		delete(f.set, f.order[0])
		f.order = f.order[1:]
	}
}
