package cluster

import (
	"encoding/hex"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
)

// Environment variables read by the head (node.Start) for the Active
// Memory Manager.
const (
	// EnvAMM turns the AMM on ("1", "true") or off ("0", "false").
	EnvAMM = "ATOLL_AMM"
	// EnvAMMInterval is its interval (a Go duration, e.g. "2s").
	EnvAMMInterval = "ATOLL_AMM_INTERVAL"
)

// Defaults of AMMConfig.
const (
	// DefaultAMMInterval is Dask's: often enough to follow a computation,
	// rare enough that a round (one request per node) costs nothing.
	DefaultAMMInterval = 2 * time.Second
	// DefaultReadGrace: a copy read this recently counts as being read
	// (a worker fetches its arguments, then pins them, milliseconds later).
	DefaultReadGrace = time.Second
	// DefaultAMMRequestTimeout bounds each node's answer in a round.
	DefaultAMMRequestTimeout = 2 * time.Second
	// DefaultReplicateTimeout bounds each replication (a node pulling a
	// copy) of a round.
	DefaultReplicateTimeout = 30 * time.Second
)

// Bounds of the replications the AMM enacts.
const (
	// maxReplicasPerRound: accepted replicas beyond it wait for a later
	// round (counted in AMMStats.ReplicasDeferred); the next snapshot
	// decides them again.
	maxReplicasPerRound = 32
	// replicasAtOnce: replication requests in flight at once in a round
	// (each node also runs at most replicateConcurrency).
	replicasAtOnce = 4
	// maxTracked bounds the objects with a tracked replica count.
	maxTracked = 1 << 16
)

// AMMFromEnv applies EnvAMM and EnvAMMInterval to on and interval (the
// variables win when set) and reports an unparsable value.
func AMMFromEnv(on bool, interval time.Duration) (bool, time.Duration, error) {
	if v := os.Getenv(EnvAMM); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return on, interval, errs.Invalidf("%s=%q: want true or false", EnvAMM, v)
		}
		on = b
	}
	if v := os.Getenv(EnvAMMInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return on, interval, errs.Invalidf("%s=%q: want a positive duration", EnvAMMInterval, v)
		}
		interval = d
	}
	return on, interval, nil
}

// AMMConfig configures the head's Active Memory Manager.
type AMMConfig struct {
	Conn *nats.Conn
	// Prefix starts the subjects; default DefaultPrefix.
	Prefix string
	// GCS lists the live nodes.
	GCS *gcs.Client
	// Enabled: the policies run from the start (SetEnabled changes it);
	// otherwise the AMM only runs drains.
	Enabled bool
	// Interval between rounds; default DefaultAMMInterval.
	Interval time.Duration
	// Policies, in order; default Replicate then ReduceReplicas
	// (Replicate suggests nothing until a count is set: SetReplicas).
	Policies []amm.Policy
	// Limits are the enactor's admission settings.
	Limits amm.Limits
	// ReadGrace: a copy read this recently is not dropped; default
	// DefaultReadGrace.
	ReadGrace time.Duration
	// RequestTimeout bounds each node's answer; default
	// DefaultAMMRequestTimeout.
	RequestTimeout time.Duration
	// ReplicateTimeout bounds each replication; default
	// DefaultReplicateTimeout.
	ReplicateTimeout time.Duration
	Logger           *slog.Logger
}

func (c *AMMConfig) validate() error {
	switch {
	case c.Conn == nil || c.GCS == nil:
		return errs.Invalidf("cluster.AMMConfig: Conn and GCS are required")
	case c.Interval < 0 || c.ReadGrace < 0 || c.RequestTimeout < 0 || c.ReplicateTimeout < 0:
		return errs.Invalidf("cluster.AMMConfig: negative durations")
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Interval == 0 {
		c.Interval = DefaultAMMInterval
	}
	if c.ReadGrace == 0 {
		c.ReadGrace = DefaultReadGrace
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultAMMRequestTimeout
	}
	if c.ReplicateTimeout == 0 {
		c.ReplicateTimeout = DefaultReplicateTimeout
	}
	if len(c.Policies) == 0 {
		c.Policies = []amm.Policy{amm.Replicate{}, amm.ReduceReplicas{}}
	}
	for i, p := range c.Policies {
		if p == nil {
			return errs.Invalidf("cluster.AMMConfig: policy %d is nil", i)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// AMMStats counts what the AMM did since its node started (they survive
// the actor's restarts).
type AMMStats struct {
	// Rounds run; snapshot sizes of the last one.
	Rounds                 uint64
	Nodes, Objects, Copies int
	// Dropped copies (the store confirmed); Replicas decided (accepted
	// by Decide), Replicated (the target node pulled its copy),
	// ReplicasDeferred (accepted beyond the round's bound, left to a
	// later round), ReplicasNoFit (the target's store was full when the
	// pull came) and ReplicateFailed (other failed replications: source
	// gone, target busy or unreachable).
	Dropped, ReplicasDecided                                     uint64
	Replicated, ReplicasDeferred, ReplicasNoFit, ReplicateFailed uint64
	// Moved counts the moves (Rebalance) whose replica was made, so whose
	// source copy was then asked to go.
	Moved uint64
	// Tracked is the number of objects with a tracked replica count.
	Tracked int
	// Refused counts suggestions Decide refused, by reason; StaleAtNode
	// the drops a node's store refused (the copy changed since the
	// snapshot); Failures the node requests that failed.
	Refused     map[string]uint64
	StaleAtNode uint64
	Failures    uint64
}

// AMM is the head's Active Memory Manager: a supervised actor that every
// interval takes a snapshot of the copies of objects on every live node,
// runs the policies (package amm) and enacts the decision. Everything it
// keeps across rounds (its counters) lives in the AMM, outside the actor
// instance, so a restart loses nothing.
type AMM struct {
	cfg AMMConfig
	mu  sync.Mutex // guards st and replicas (read and set from other goroutines); a leaf
	st  AMMStats
	// replicas are the tracked replica counts (SetReplicas): they live
	// here, not in the actor, so a restart keeps them; a head restart
	// loses them.
	replicas map[amm.ObjectID]int
	// enabled: the policies run (SetEnabled); drains are the drains under
	// way and the last finished ones (Drain).
	enabled bool
	drains  map[amm.NodeID]*drainInfo
}

// NewAMM validates cfg and returns the AMM; spawn Props() to run it.
func NewAMM(cfg AMMConfig) (*AMM, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &AMM{cfg: cfg, st: AMMStats{Refused: map[string]uint64{}}, replicas: map[amm.ObjectID]int{},
		enabled: cfg.Enabled, drains: map[amm.NodeID]*drainInfo{}}, nil
}

// Props makes the AMM's actor.
func (a *AMM) Props() *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &ammActor{a: a} }, actors.RestartForever(a.cfg.Logger, "amm"))
}

// Stats returns a copy of the counters.
func (a *AMM) Stats() AMMStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	st.Refused = make(map[string]uint64, len(a.st.Refused))
	for k, v := range a.st.Refused {
		st.Refused[k] = v
	}
	st.Tracked = len(a.replicas)
	return st
}

// SetReplicas sets the tracked replica count of an object (hex id) for
// the Replicate policy: n copies (the primary included), amm.AllNodes
// for one on every node that is neither a driver's nor retiring, 0 to
// stop tracking. The count lasts until the object is gone from every
// node (the AMM forgets it then) or the head restarts.
func (a *AMM) SetReplicas(object string, n int) error {
	b, err := hex.DecodeString(object)
	if err != nil || validObjectID(b) != nil {
		return errs.Invalidf("SetReplicas: bad object id %q", object)
	}
	if n < amm.AllNodes || n > maxReplicaCount {
		return errs.Invalidf("SetReplicas: count %d: want 0..%d or %d (every node)", n, maxReplicaCount, amm.AllNodes)
	}
	id := amm.ObjectID(object)
	a.mu.Lock()
	defer a.mu.Unlock()
	if n == 0 {
		delete(a.replicas, id)
		return nil
	}
	if _, ok := a.replicas[id]; !ok && len(a.replicas) >= maxTracked {
		return errs.Unavailablef("SetReplicas: %d objects tracked already (the most the AMM keeps)", maxTracked)
	}
	a.replicas[id] = n
	return nil
}

// maxReplicaCount bounds a tracked count (a count above the live nodes
// means every node).
const maxReplicaCount = 1 << 10

// serveSetReplicas answers a SetReplicas request from a driver.
func (a *AMM) serveSetReplicas(m *nats.Msg) {
	var req atollpb.SetReplicas
	var err error
	if err = proto.Unmarshal(m.Data, &req); err != nil {
		err = errs.Invalidf("SetReplicas: undecodable request")
	} else {
		err = a.SetReplicas(hex.EncodeToString(req.ObjectId), int(req.Replicas))
	}
	var reply atollpb.SetReplicasReply
	if err != nil {
		reply.Error = errs.ToProto(err)
	}
	b, _ := proto.Marshal(&reply)
	_ = m.Respond(b)
}

// tracked sets the tracked counts on the snapshot's objects, and forgets
// the counts of objects no node holds when every node answered in full
// (a node that did not answer, or left objects out, may hold them).
func (a *AMM) tracked(s *amm.Snapshot, complete bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, n := range a.replicas {
		if o := s.Objects[id]; o != nil {
			o.Replicas = n
		} else if complete {
			delete(a.replicas, id)
		}
	}
}

// Messages of the AMM actor.
type (
	ammTick     struct{}
	ammGathered struct {
		snap   *amm.Snapshot
		owners map[amm.ObjectID]string
		info   map[amm.ObjectID]*atollpb.ObjectHolding
		failed int
		// alive: the nodes the GCS listed alive; drainInfo: what each
		// draining node said of itself.
		alive     map[amm.NodeID]bool
		drainInfo map[amm.NodeID]drainNodeInfo
	}
	// drainNodeInfo is a draining node's answer to the inventory request.
	drainNodeInfo struct {
		queued, running int32
		truncated       bool
	}
	ammEnacted struct {
		dropped, stale, failed                  int
		replicated, noFit, replFailed, deferred int
		moved                                   int // moves whose replica was made (their drop sent)
	}
)

// ammActor runs the rounds: a tick starts a gathering goroutine (NATS
// requests to every node), whose snapshot comes back as a message; the
// actor decides, and an enacting goroutine sends the drops and reports
// back; only then is the next tick armed, so rounds never overlap.
type ammActor struct {
	a     *AMM
	timer *time.Timer
	subs  []*nats.Subscription // SetReplicas, control and drain requests
}

// Receive implements actor.Actor.
func (x *ammActor) Receive(ctx actor.Context) {
	a := x.a
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for _, s := range []struct {
			subject string
			serve   nats.MsgHandler
		}{
			{ammReplicasSubject(a.cfg.Prefix), a.serveSetReplicas},
			{ammControlSubject(a.cfg.Prefix), a.serveControl},
			{ammDrainSubject(a.cfg.Prefix), a.serveDrain},
		} {
			sub, err := a.cfg.Conn.Subscribe(s.subject, s.serve)
			if err != nil {
				a.cfg.Logger.Warn("amm: subscribe: drivers and the CLI cannot reach the AMM", "subject", s.subject, "err", err)
				continue
			}
			x.subs = append(x.subs, sub)
		}
		x.arm(ctx)
	case *actor.Stopping, *actor.Restarting:
		if x.timer != nil {
			x.timer.Stop()
		}
		for _, s := range x.subs {
			_ = s.Unsubscribe()
		}
		x.subs = nil
	case *ammTick:
		if !a.Enabled() && !a.activeDrains() {
			x.arm(ctx) // nothing to do this round
			return
		}
		root, self := ctx.ActorSystem().Root, ctx.Self()
		go func() { root.Send(self, a.gather()) }()
	case *ammGathered:
		dec := amm.Run(m.snap, a.roundPolicies(m.snap), a.cfg.Limits)
		var copies int
		for _, o := range m.snap.Objects {
			copies += len(o.Copies)
		}
		a.mu.Lock()
		a.st.Rounds++
		a.st.Nodes, a.st.Objects, a.st.Copies = len(m.snap.Nodes), len(m.snap.Objects), copies
		a.st.Failures += uint64(m.failed)
		a.st.ReplicasDecided += uint64(len(dec.Replicas) + len(dec.Moves))
		for r, n := range dec.Refused {
			a.st.Refused[r] += uint64(n)
		}
		a.mu.Unlock()
		if len(dec.Drops) == 0 && len(dec.Replicas) == 0 && len(dec.Moves) == 0 && !a.activeDrains() {
			x.arm(ctx)
			return
		}
		root, self := ctx.ActorSystem().Root, ctx.Self()
		go func() {
			// Replicas (and moves' replicas) first; a move's source copy
			// is dropped only once its replica was made.
			out, moved := a.replicate(m.snap, append(slices.Clone(dec.Replicas), dec.Moves...), m.owners, m.info)
			all := append(slices.Clone(dec.Drops), moved...)
			drops := a.enact(all, m.owners)
			drops.replicated, drops.noFit, drops.replFailed, drops.deferred = out.replicated, out.noFit, out.replFailed, out.deferred
			drops.moved = len(moved)
			a.drainStep(m, all)
			root.Send(self, drops)
		}()
	case *ammEnacted:
		a.mu.Lock()
		a.st.Dropped += uint64(m.dropped)
		a.st.StaleAtNode += uint64(m.stale)
		a.st.Failures += uint64(m.failed)
		a.st.Replicated += uint64(m.replicated)
		a.st.ReplicasNoFit += uint64(m.noFit)
		a.st.ReplicateFailed += uint64(m.replFailed)
		a.st.ReplicasDeferred += uint64(m.deferred)
		a.st.Moved += uint64(m.moved)
		a.mu.Unlock()
		x.arm(ctx)
	}
}

func (x *ammActor) arm(ctx actor.Context) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	x.timer = time.AfterFunc(x.a.cfg.Interval, func() { root.Send(self, &ammTick{}) })
}
