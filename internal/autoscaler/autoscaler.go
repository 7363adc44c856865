package autoscaler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The autoscaler's actor on the head: the shell of Decide. It follows the
// nodes (the GCS's node events, their load reports: what each runs,
// queues and cannot start, and since when it is idle), keeps the
// instances it launched and the request_resources of the jobs, and every
// Interval runs a round: it asks the GCS for the placement groups not
// placed, decides (Decide) and carries the decision out off the actor:
// launches and terminations through the NodeProvider, drains through the
// head's Active Memory Manager (the node takes no new work, its objects
// are copied elsewhere, then it leaves; its instance is terminated once
// its node is gone). It answers request_resources on gcs.AutoscalerSubject,
// its status on StatusSubject and `atoll down`'s shutdown on
// ShutdownSubject.

// Config configures the autoscaler.
type Config struct {
	// File is the cluster file; Provider launches its node types.
	File     *ClusterFile
	Provider NodeProvider
	// Conn is the head's NATS connection; GCS its client.
	Conn *nats.Conn
	GCS  *gcs.Client
	// Drain drains a node (the head's AMM.Drain): it returns once the node
	// takes no new work; the node leaves when its objects have copies
	// elsewhere.
	Drain func(ctx context.Context, node ids.NodeID) error
	// Node is the settings every launched node starts with (Address,
	// Credentials, NodeIP, FailureTimeout); the type's resources, object
	// store, NodeType and InstanceID are added per launch.
	Node nodeconfig.Config
	// Prefix of the subjects; default "atoll".
	Prefix string
	Logger *slog.Logger
}

// StatusSubject is where the autoscaler answers AutoscalerStatusRequest.
func StatusSubject(prefix string) string { return prefix + ".autoscaler.status" }

// ShutdownSubject is where it takes AutoscalerShutdown (`atoll down`).
func ShutdownSubject(prefix string) string { return prefix + ".autoscaler.shutdown" }

// Bounds of the autoscaler's state.
const (
	maxDecisions = 64
	maxRequests  = 1024 // jobs with a request_resources at once
	maxBundles   = 1024 // bundles of one request
	// maxBundleResources and maxResourceName bound a bundle's resources
	// and their names.
	maxBundleResources = 64
	maxResourceName    = 256
	// maxShutdownMs bounds the timeout of a shutdown request (an hour).
	maxShutdownMs = int64(time.Hour / time.Millisecond)
	// opTimeout bounds a launch, a drain request and a termination.
	opTimeout = 3 * time.Minute
)

// Autoscaler is the head's autoscaler. Its state belongs to its actor;
// Status is safe for concurrent use.
type Autoscaler struct {
	cfg    Config
	policy Policy
	types  map[string]NodeTypeSpec

	mu     sync.Mutex
	status *atollpb.AutoscalerStatus
}

// New checks cfg and returns the autoscaler (spawn Props).
func New(cfg Config) (*Autoscaler, error) {
	if cfg.File == nil || cfg.Provider == nil || cfg.Conn == nil || cfg.GCS == nil || cfg.Drain == nil {
		return nil, errs.Invalidf("autoscaler: Config needs File, Provider, Conn, GCS and Drain")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = gcs.DefaultPrefix
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Autoscaler{cfg: cfg, policy: cfg.File.Policy(), types: cfg.File.NodeTypes, status: &atollpb.AutoscalerStatus{}}, nil
}

// Props are the actor's props.
func (a *Autoscaler) Props() *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &shell{a: a} })
}

// Status is the autoscaler's status after its last round.
func (a *Autoscaler) Status() *atollpb.AutoscalerStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return proto.CloneOf(a.status)
}

// shell is the actor.
type shell struct {
	a     *Autoscaler
	root  *actor.RootContext
	self  *actor.PID
	subs  []*nats.Subscription
	stop  chan struct{}
	ready bool

	nodes      map[ids.NodeID]*nodeState
	gone       map[ids.NodeID]bool
	instances  map[string]*Instance
	requests   map[string][]raylet.Resources
	decisions  []*atollpb.AutoscalerDecision
	unmet      []Unmet
	infeasible map[string]bool // the infeasible demands already recorded
	rounds     int64
	gathering  bool
	lastErr    string
	lastRound  time.Time
	shutdown   bool
}

type nodeState struct {
	info     *atollpb.NodeInfo
	load     *atollpb.NodeLoad
	busySeen time.Time // the last report that showed it busy (or its join)
	why      string
}

// Messages.
type (
	tick       struct{}
	nodeEvent  struct{ info *atollpb.NodeInfo }
	loadReport struct{ load *atollpb.NodeLoad }
	roundData  struct {
		groups []*atollpb.PlacementGroupInfo
		err    error
	}
	opDone struct {
		instance string
		what     string // launch, drain, terminate
		err      error
	}
	natsRequest struct {
		kind string // request, status, shutdown
		msg  *nats.Msg
	}
	adopt struct{ instances map[string]string }
)

func (s *shell) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		s.close()
	case *tick:
		s.tick()
	case *nodeEvent:
		s.nodeEvent(time.Now(), m.info)
	case *loadReport:
		s.loadReport(time.Now(), m.load)
	case *roundData:
		s.round(time.Now(), m)
	case *opDone:
		s.opDone(time.Now(), m)
	case *natsRequest:
		s.serve(m)
	case *adopt:
		s.adopt(time.Now(), m.instances)
	}
}

func (s *shell) start(ctx actor.Context) {
	s.root, s.self = ctx.ActorSystem().Root, ctx.Self()
	s.nodes, s.gone, s.instances = map[ids.NodeID]*nodeState{}, map[ids.NodeID]bool{}, map[string]*Instance{}
	s.requests, s.infeasible = map[string][]raylet.Resources{}, map[string]bool{}
	c := s.a.cfg
	send := func(m any) { s.root.Send(s.self, m) }
	for _, sub := range []struct {
		subject, queue string
		cb             nats.MsgHandler
	}{
		{gcs.NodeEventsSubject(c.Prefix), "", func(m *nats.Msg) {
			info := &atollpb.NodeInfo{}
			if proto.Unmarshal(m.Data, info) == nil && len(info.NodeId) == ids.Len16 {
				send(&nodeEvent{info: info})
			}
		}},
		{c.Prefix + ".load.*", "", func(m *nats.Msg) {
			l := &atollpb.NodeLoad{}
			if proto.Unmarshal(m.Data, l) == nil && len(l.NodeId) == ids.Len16 {
				send(&loadReport{load: l})
			}
		}},
		{gcs.AutoscalerSubject(c.Prefix), "autoscaler", func(m *nats.Msg) { send(&natsRequest{kind: "request", msg: m}) }},
		{StatusSubject(c.Prefix), "autoscaler", func(m *nats.Msg) { send(&natsRequest{kind: "status", msg: m}) }},
		{ShutdownSubject(c.Prefix), "autoscaler", func(m *nats.Msg) { send(&natsRequest{kind: "shutdown", msg: m}) }},
	} {
		var sb *nats.Subscription
		var err error
		if sub.queue != "" {
			sb, err = c.Conn.QueueSubscribe(sub.subject, sub.queue, sub.cb)
		} else {
			sb, err = c.Conn.Subscribe(sub.subject, sub.cb)
		}
		if err != nil {
			c.Logger.Error("autoscaler: subscribe", "subject", sub.subject, "err", err)
			continue
		}
		s.subs = append(s.subs, sb)
	}
	s.stop = make(chan struct{})
	interval := time.Duration(c.File.Interval)
	go func(stop chan struct{}) {
		// The nodes the GCS knows and the instances the provider runs
		// (a restarted head takes them over), then a round every interval.
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		if nodes, err := c.GCS.ListNodes(ctx); err == nil {
			for _, n := range nodes {
				send(&nodeEvent{info: n})
			}
		}
		if ins, err := c.Provider.Instances(ctx); err == nil {
			send(&adopt{instances: ins})
		}
		cancel()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				send(&tick{})
			case <-stop:
				return
			}
		}
	}(s.stop)
	s.ready = true
	c.Logger.Info("autoscaler: started", "provider", c.File.Provider.Type, "node_types", len(c.File.NodeTypes),
		"idle_timeout", time.Duration(c.File.IdleTimeout), "interval", interval)
}

func (s *shell) close() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
}

// adopt takes over the provider's instances a restarted head did not
// launch.
func (s *shell) adopt(now time.Time, found map[string]string) {
	for id, typ := range found {
		if s.instances[id] != nil {
			continue
		}
		in := &Instance{ID: id, Type: typ, State: Launching, Since: now}
		for nid, n := range s.nodes {
			if n.info.GetInstanceId() == id {
				in.State, in.NodeID = Running, nid.String()
			}
		}
		s.instances[id] = in
		s.a.cfg.Logger.Info("autoscaler: took over an instance", "instance", id, "type", typ, "state", in.State)
	}
}

func (s *shell) nodeEvent(now time.Time, info *atollpb.NodeInfo) {
	id := ids.MustFromBytes(info.NodeId)
	if info.State != atollpb.NodeState_NODE_ALIVE {
		delete(s.nodes, id)
		s.gone[id] = true
		return
	}
	if s.gone[id] {
		return
	}
	n := s.nodes[id]
	if n == nil {
		n = &nodeState{busySeen: now}
		s.nodes[id] = n
	}
	n.info = info
	if in := s.instances[info.InstanceId]; in != nil && info.InstanceId != "" && in.State == Launching {
		in.State, in.NodeID, in.Since = Running, id.String(), now
		s.a.cfg.Logger.Info("autoscaler: a launched node joined", "instance", in.ID, "node", id.Short(), "type", in.Type)
	}
}

func (s *shell) loadReport(now time.Time, l *atollpb.NodeLoad) {
	id := ids.MustFromBytes(l.NodeId)
	n := s.nodes[id]
	if n == nil || l.Leaving {
		return
	}
	n.load = l
	if why := busy(l); why != "" {
		n.busySeen, n.why = now, why
	} else {
		n.why = ""
	}
}

// busy says what keeps a node from being idle ("" if nothing): running
// or queued work, actors, placement-group bundles, pinned objects, or
// resources in use.
func busy(l *atollpb.NodeLoad) string {
	var why []string
	if l.Running > 0 {
		why = append(why, fmt.Sprintf("%d running", l.Running))
	}
	if l.Queued > 0 {
		why = append(why, fmt.Sprintf("%d queued", l.Queued))
	}
	if l.Actors > 0 {
		why = append(why, fmt.Sprintf("%d actors", l.Actors))
	}
	if len(l.Bundles) > 0 {
		why = append(why, fmt.Sprintf("%d placement-group bundles", len(l.Bundles)))
	}
	if p := l.GetStore().GetPinnedBytes(); p > 0 {
		why = append(why, fmt.Sprintf("%d pinned bytes", p))
	}
	if len(why) == 0 {
		for k, total := range l.Total {
			if !raylet.IsGroupResource(k) && l.Available[k] < total-1e-9 {
				why = append(why, k+" in use")
				break
			}
		}
	}
	return strings.Join(why, ", ")
}

// tick starts a round: the placement groups are asked for off the actor.
func (s *shell) tick() {
	if s.gathering || s.shutdown {
		return
	}
	s.gathering = true
	c, send := s.a.cfg, s.root
	self := s.self
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		groups, err := c.GCS.ListPlacementGroups(ctx)
		send.Send(self, &roundData{groups: groups, err: err})
	}()
}

// round decides and starts carrying the decision out.
func (s *shell) round(now time.Time, data *roundData) {
	s.gathering = false
	if s.shutdown {
		return
	}
	s.rounds++
	s.lastRound = now
	s.lastErr = ""
	if data.err != nil {
		s.lastErr = "placement groups: " + data.err.Error()
	}
	snap := s.snapshot(now, data.groups)
	d := Decide(s.a.policy, snap)
	s.unmet = d.Unmet
	c := s.a.cfg
	for _, tm := range d.Terminations {
		in := s.instances[tm.Instance]
		if in == nil {
			continue
		}
		in.State, in.Since = Terminating, now
		s.record(now, "terminate", in.Type, 1, in.ID, in.NodeID, tm.Reason)
		s.do(in.ID, "terminate", func(ctx context.Context) error { return c.Provider.Terminate(ctx, in.ID) })
	}
	for _, dr := range d.Drains {
		in := s.instances[dr.Instance]
		node, err := ids.FromHex(dr.NodeID)
		if in == nil || err != nil {
			continue
		}
		in.State, in.Since = Draining, now
		s.record(now, "drain", in.Type, 1, in.ID, dr.NodeID, dr.Reason)
		s.do(in.ID, "drain", func(ctx context.Context) error { return c.Drain(ctx, node) })
	}
	for _, l := range d.Launches {
		spec := s.a.types[l.Type]
		s.record(now, "launch", l.Type, l.Count, "", "", l.Reason)
		for range l.Count {
			id := instanceID(c.File.ClusterName, l.Type)
			s.instances[id] = &Instance{ID: id, Type: l.Type, State: Launching, Since: now}
			cfg := s.nodeConfig(l.Type, spec, id)
			s.do(id, "launch", func(ctx context.Context) error { return c.Provider.Launch(ctx, spec, cfg) })
		}
	}
	seen := map[string]bool{}
	for _, u := range d.Unmet {
		if !u.Infeasible {
			continue
		}
		k := u.Source + "|" + raylet.Resources(u.Resources).String()
		seen[k] = true
		if !s.infeasible[k] {
			s.record(now, "infeasible", "", u.Count, "", "", fmt.Sprintf("%s %s: %s", u.Source, raylet.Resources(u.Resources), u.Reason))
		}
	}
	s.infeasible = seen
	s.publishStatus(now)
}

// snapshot is the round's view of the cluster.
func (s *shell) snapshot(now time.Time, groups []*atollpb.PlacementGroupInfo) Snapshot {
	snap := Snapshot{Now: now}
	// The nodes the GCS places a bundle on are busy whatever their last
	// load report says: a report sent before the bundle was committed
	// would show an idle node, and draining it would strand the group.
	// Their idle time starts again when the group goes.
	holds := map[string]string{}
	for _, g := range groups {
		if g.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
			continue
		}
		for i, b := range g.BundleNodes {
			if len(b) == ids.Len16 {
				holds[hex.EncodeToString(b)] = fmt.Sprintf("bundle %d of placement group %s", i, hex.EncodeToString(g.PlacementGroupId)[:8])
			}
		}
	}
	for id, n := range s.nodes {
		l := n.load
		held, holding := holds[id.String()]
		if holding {
			n.busySeen = now
		}
		for _, d := range l.GetDemands() {
			snap.Demands = append(snap.Demands, Demand{Resources: raylet.Resources(d.Resources).Clone(), Count: int(d.Count), Actors: d.Actors})
		}
		if n.info.GetIsDriver() {
			continue // a driver's node holds no capacity
		}
		node := Node{ID: id.String(), Type: n.info.GetNodeType(), Instance: n.info.GetInstanceId(), Head: n.info.GetIsHead(),
			Busy: n.why != "", Why: n.why, IdleSince: n.busySeen}
		if holding && n.why == "" {
			node.Busy, node.Why = true, held
		}
		if l == nil {
			// Joined, not reporting yet: room as registered, and not idle.
			node.Total, node.Available = fold(n.info.GetResources(), n.info.GetResources())
			node.Busy, node.Why = true, "no load report yet"
		} else {
			node.Total, node.Available = fold(l.Total, l.Available)
			node.Draining = l.Draining
		}
		snap.Nodes = append(snap.Nodes, node)
	}
	for _, in := range s.instances {
		snap.Instances = append(snap.Instances, *in)
	}
	for _, g := range groups {
		if g.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_PENDING && g.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_RESCHEDULING {
			continue
		}
		gd := GroupDemand{ID: hex.EncodeToString(g.PlacementGroupId)[:8], Strategy: g.Strategy}
		for i, b := range g.Bundles {
			if i < len(g.BundleNodes) && len(g.BundleNodes[i]) > 0 {
				gd.Placed = append(gd.Placed, hex.EncodeToString(g.BundleNodes[i]))
				continue
			}
			gd.Bundles = append(gd.Bundles, raylet.Resources(b.GetResources()).Clone())
		}
		snap.Groups = append(snap.Groups, gd)
	}
	for _, k := range slices.Sorted(maps.Keys(s.requests)) {
		snap.Requests = append(snap.Requests, s.requests[k]...)
	}
	return snap
}

// fold is a node's plain resources, what placement-group bundles reserve
// counted in the total and as in use.
func fold(total, avail map[string]float64) (raylet.Resources, raylet.Resources) {
	t, a := raylet.Resources{}, raylet.Resources{}
	for k, v := range total {
		name, rest, ok := strings.Cut(k, "_group_")
		switch {
		case !ok:
			t[k] += v
		case name != raylet.BundleResource && !strings.Contains(rest, "_"):
			t[name] += v
		}
	}
	for k, v := range avail {
		if !raylet.IsGroupResource(k) {
			a[k] = v
		}
	}
	return t, a
}

// nodeConfig is the settings of a node of type typ on instance id.
func (s *shell) nodeConfig(typ string, spec NodeTypeSpec, id string) nodeconfig.Config {
	cfg := s.a.cfg.Node
	cfg.Head, cfg.Driver, cfg.Autoscaler, cfg.Dashboard = false, false, "", false
	cfg.NodeType, cfg.InstanceID = typ, id
	cfg.NumCPUs = spec.Resources["CPU"]
	cfg.Resources = map[string]float64{}
	for k, v := range spec.Resources {
		if k != "CPU" {
			cfg.Resources[k] = v
		}
	}
	if spec.ObjectStoreMemory > 0 {
		cfg.ObjectStoreMemory = uint64(spec.ObjectStoreMemory)
	}
	return cfg
}

// do runs an operation off the actor and reports its end.
func (s *shell) do(instance, what string, op func(ctx context.Context) error) {
	root, self := s.root, s.self
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		err := op(ctx)
		root.Send(self, &opDone{instance: instance, what: what, err: err})
	}()
}

func (s *shell) opDone(now time.Time, m *opDone) {
	in := s.instances[m.instance]
	if in == nil {
		return
	}
	log := s.a.cfg.Logger
	switch {
	case m.what == "terminate":
		if m.err != nil {
			log.Warn("autoscaler: terminating an instance failed", "instance", in.ID, "err", m.err)
			s.lastErr = "terminate " + in.ID + ": " + m.err.Error()
		}
		delete(s.instances, in.ID)
	case m.err == nil:
	case m.what == "launch":
		log.Warn("autoscaler: launching an instance failed", "instance", in.ID, "type", in.Type, "err", m.err)
		s.lastErr = "launch " + in.ID + ": " + m.err.Error()
		s.record(now, "launch-failed", in.Type, 1, in.ID, "", m.err.Error())
		delete(s.instances, in.ID)
	case m.what == "drain":
		// A node that cannot be drained (it took work since the report
		// that showed it idle, it died meanwhile, the head refused) stays
		// as it was; the next round looks again.
		log.Warn("autoscaler: draining a node failed", "instance", in.ID, "node", in.NodeID, "err", m.err)
		s.lastErr = "drain " + in.ID + ": " + m.err.Error()
		s.record(now, "drain-refused", in.Type, 1, in.ID, in.NodeID, m.err.Error())
		if id, err := ids.FromHex(in.NodeID); err == nil && s.nodes[id] != nil {
			s.nodes[id].busySeen = now // idle from now on, not from before the refusal
		}
		if in.State == Draining {
			in.State, in.Since = Running, now
		}
	}
	s.publishStatus(now)
}

// record keeps a decision (the last maxDecisions) and logs it.
func (s *shell) record(now time.Time, action, typ string, count int, instance, node, reason string) {
	d := &atollpb.AutoscalerDecision{UnixMs: now.UnixMilli(), Action: action, NodeType: typ, Count: int32(count), InstanceId: instance, Reason: reason}
	if id, err := ids.FromHex(node); err == nil {
		d.NodeId = id.Bytes()
	}
	s.decisions = append(s.decisions, d)
	if len(s.decisions) > maxDecisions {
		s.decisions = s.decisions[len(s.decisions)-maxDecisions:]
	}
	s.a.cfg.Logger.Info("autoscaler: "+action, "type", typ, "count", count, "instance", instance, "node", shortHex(node), "reason", reason)
}

func shortHex(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// instanceID names a new instance: <cluster>-<type>-<random>, usable as a
// Kubernetes pod name.
func instanceID(cluster, typ string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	if cluster == "" {
		cluster = "atoll"
	}
	return fmt.Sprintf("%s-%s-%s", cluster, typ, hex.EncodeToString(b))
}
