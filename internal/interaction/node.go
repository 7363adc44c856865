package interaction

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// node is one node of the cluster: its raylet (a raylet.Core), its
// gateway (a cluster.Forwarder), its object store (an objectstore.Store),
// its pool workers and the harness's view of its membership.
type node struct {
	env    *Env
	name   string
	id     ids.NodeID
	head   bool
	raylet *raylet.Core
	gw     *cluster.Forwarder
	store  *objectstore.Store
	gwPID  *actor.PID
	// workers are the pool workers the raylet started, by name.
	workers  map[string]*worker
	nworkers int
	timers   []armed
	// crashed: the node died; left: it left the cluster, drained.
	crashed, left bool
	draining      bool
	// unreachable: since when each node this one cannot reach has been
	// out of reach; declared: the nodes its membership declared gone.
	unreachable map[*node]time.Time
	declared    map[*node]bool
	// lost: the peers its gateway reported lost (its fetcher pulls
	// nothing from them).
	lost map[*node]bool
	// pulls are the transfers into this node's store under way.
	pulls    map[ids.ObjectID]*pull
	lastView string
}

// armed is a timer a raylet armed and that has not fired.
type armed struct {
	at    time.Time
	timer raylet.Timer
}

func (n *node) up() bool { return !n.crashed && !n.left }

func (n *node) rayletParty() party { return party{kind: kRaylet, node: n, name: n.name} }
func (n *node) gwParty() party     { return party{kind: kGateway, node: n, name: n.name + ".gw"} }
func (n *node) storeParty() party {
	return party{kind: kStore, node: n, name: n.name + ".store"}
}

// xfer is the store client id of the node's transfers (pulls and serves).
func (n *node) xfer() ids.WorkerID { return ids.WorkerID(n.env.id(n.name + ".xfer")) }

func (e *Env) nodeByID(id ids.NodeID) *node {
	for _, n := range e.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (e *Env) nodeArg(name string) (*node, error) {
	n := e.byNode[name]
	if n == nil {
		return nil, fmt.Errorf("no node %q", name)
	}
	return n, nil
}

// cmdAddNode: add-node n1 [cpu=N] [workers=N] [max=N] [depth=N]
// [store=SIZE]. The first node is the head: it runs the GCS (and the
// AMM).
func (e *Env) cmdAddNode(c Cmd) error {
	name := c.pos(0)
	if name == "" || e.byNode[name] != nil {
		return fmt.Errorf("add-node: bad or duplicate name %q", name)
	}
	cpu, err := c.float("cpu", 1)
	if err != nil {
		return err
	}
	workers, err := c.int("workers", int(math.Ceil(cpu)))
	if err != nil {
		return err
	}
	maxWorkers, err := c.int("max", max(workers, 1))
	if err != nil {
		return err
	}
	depth, err := c.int("depth", 1)
	if err != nil {
		return err
	}
	capacity, err := parseSize(c.val("store", "64MiB"))
	if err != nil {
		return err
	}
	n := &node{env: e, name: name, id: e.id(name), head: len(e.nodes) == 0, workers: map[string]*worker{},
		unreachable: map[*node]time.Time{}, declared: map[*node]bool{}, lost: map[*node]bool{}, pulls: map[ids.ObjectID]*pull{}}
	n.gwPID = &actor.PID{Address: name, Id: name + ".gw"}
	n.raylet = raylet.NewCore(raylet.CoreConfig{
		NodeID: n.id, Resources: raylet.Resources{raylet.CPU: cpu}, NumWorkers: workers, MaxWorkers: maxWorkers,
		IdleTimeout: 10 * time.Second, StoreCapacity: capacity, ArgsFraction: 0.7, Saturation: 1, PipelineDepth: depth,
		Cluster: true,
		NewWorkerID: func() ids.WorkerID {
			n.nworkers++
			return ids.WorkerID(e.id(fmt.Sprintf("%s.w%d", name, n.nworkers)))
		},
	})
	n.gw = cluster.NewForwarder(cluster.ForwarderConfig{Self: n.id, IsHead: n.head})
	n.store = objectstore.NewStore(capacity)
	e.nodes = append(e.nodes, n)
	e.byNode[name] = n
	role := ""
	if n.head {
		role = " (head: GCS, AMM)"
		e.gcs = newGCS(n)
	}
	e.printf("%s: cpu=%g workers=%d max=%d depth=%d store=%s%s", name, cpu, workers, maxWorkers, depth, c.val("store", "64MiB"), role)
	e.nested(func() {
		n.raylet.Start(e.now)
		e.rayletEffects(n)
		// Gossip: the new node and the others learn each other as members.
		for _, m := range e.nodes {
			e.stepGW(m, cluster.PeerJoined{Node: n.id})
			if m != n {
				e.stepGW(n, cluster.PeerJoined{Node: m.id})
			}
		}
	})
	return nil
}

// gossip plays one round of load reports: every live node's gateway
// hears the others' (their raylets' state) on the links the partition
// leaves up, and gives its raylet the new view.
func (e *Env) gossip() {
	for _, to := range e.nodes {
		if !to.up() {
			continue
		}
		for _, from := range e.nodes {
			if from == to || !from.up() || e.cut[from] != e.cut[to] {
				continue
			}
			st := from.raylet.State()
			load := &atollpb.NodeLoad{NodeId: from.id.Bytes(), Total: st.Total, Available: st.Available, Queued: int32(st.Queued),
				Running: int32(st.Running), QueuedCpu: st.QueuedCPU, TransferAddress: from.name, IsHead: from.head, Draining: from.draining,
				FreeSeq: from.gw.FreeSeq()}
			e.stepGW(to, cluster.Received{Msg: load})
		}
	}
}

// Time.

// tick advances the clock by d, firing on the way, in time order, the
// raylets' timers, the membership's verdicts (a node out of reach for
// FailureBudget is declared gone by those that cannot reach it) and the
// gateways' lease ticks (every ConfirmInterval: confirmations travel at
// once on the links that are up, unprinted; expired leases fail their
// attempts with FORWARD_LOST).
func (e *Env) tick(d time.Duration) {
	end := e.now.Add(d)
	for {
		at, fire := e.nextEvent(end)
		if fire == nil {
			break
		}
		e.now = at
		fire()
		e.updateReachability()
	}
	e.now = end
	e.printf("now %s", e.since(e.now))
}

// nextEvent returns the earliest event due by end and what fires it.
func (e *Env) nextEvent(end time.Time) (time.Time, func()) {
	best := end.Add(time.Nanosecond)
	var fire func()
	consider := func(at time.Time, f func()) {
		if at.Before(best) {
			best, fire = at, f
		}
	}
	for _, n := range e.nodes {
		if !n.up() {
			continue
		}
		for i, t := range n.timers {
			consider(t.at, func() {
				n.timers = append(n.timers[:i], n.timers[i+1:]...)
				e.printf("%s %s: timer %s fired", e.since(e.now), n.name, timerName(t.timer))
				e.nested(func() {
					n.raylet.TimerFired(e.now, t.timer)
					e.rayletEffects(n)
				})
			})
		}
		for _, s := range e.sortedUnreachable(n) {
			consider(n.unreachable[s].Add(FailureBudget), func() {
				n.declared[s] = true
				delete(n.unreachable, s)
				verdict := "dead"
				if s.left {
					verdict = "left"
				}
				e.printf("%s %s: membership: %s %s", e.since(e.now), n.name, s.name, verdict)
				e.nested(func() { e.stepGW(n, cluster.PeerGone{Node: s.id, Died: !s.left}) })
			})
		}
	}
	consider(e.nextLease, func() {
		e.nextLease = e.nextLease.Add(ConfirmInterval)
		for _, n := range e.nodes {
			if n.up() {
				e.leaseTick(n)
			}
		}
	})
	return best, fire
}

func (e *Env) sortedUnreachable(n *node) []*node {
	out := make([]*node, 0, len(n.unreachable))
	for s := range n.unreachable {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func timerName(t raylet.Timer) string {
	switch t.Kind {
	case raylet.TimerReap:
		return "reap"
	case raylet.TimerRespawn:
		return "respawn " + t.Binary
	}
	return fmt.Sprint(t.Kind)
}

// leaseTick steps a gateway's LeaseTick: its confirmations (HeldWork)
// reach their nodes at once where the link is up, and are lost across a
// partition; whatever else it does is printed.
func (e *Env) leaseTick(n *node) {
	n.gw.Step(e.now, cluster.LeaseTick{})
	var shown bool
	for _, eff := range n.gw.TakeEffects() {
		if p, ok := eff.(cluster.Publish); ok && p.Kind == cluster.KindHeld {
			to := e.nodeByID(p.To)
			if to != nil && to.up() && e.cut[to] == e.cut[n] {
				e.stepGW(to, cluster.Received{Msg: p.Msg})
			}
			continue
		}
		if !shown {
			e.printf("%s %s.gw: lease tick", e.since(e.now), n.name)
			shown = true
		}
		e.nested(func() { e.applyGW(n, eff) })
	}
}

// updateReachability records, for every live node, since when each other
// node has been out of its reach (dead, departed, or across the
// partition).
func (e *Env) updateReachability() {
	for _, o := range e.nodes {
		if !o.up() {
			continue
		}
		for _, s := range e.nodes {
			if s == o || o.declared[s] {
				continue
			}
			if s.up() && e.cut[o] == e.cut[s] {
				delete(o.unreachable, s)
			} else if _, ok := o.unreachable[s]; !ok {
				o.unreachable[s] = e.now
			}
		}
	}
}

// Crashes.

// cmdCrash: crash <node> | <worker> | <actor> | <driver>: the party's
// state is gone; its peers learn by the normal path (a worker's exit
// reaches its raylet; a host's supervisor restarts it or gives up; a
// node's death reaches the others through membership after
// FailureBudget).
func (e *Env) cmdCrash(c Cmd) error {
	name := c.pos(0)
	reason := c.val("reason", "crashed")
	if n := e.byNode[name]; n != nil {
		if !n.up() {
			return fmt.Errorf("crash: %s is not up", name)
		}
		if n.head {
			return fmt.Errorf("crash: %s is the head (it runs the GCS)", name)
		}
		n.crashed = true
		var gone []string
		for _, p := range e.sortedProcs() {
			if p.node == n && p.alive {
				p.alive = false
				gone = append(gone, p.name)
			}
		}
		for _, h := range e.sortedHosts() {
			if h.node == n && !h.gone {
				h.gone = true
			}
		}
		for _, w := range n.workers {
			w.alive = false
		}
		e.printf("%s crashed: its raylet, gateway, store and processes [%s] are gone", name, strings.Join(gone, " "))
		return nil
	}
	if h := e.hosts[name]; h != nil {
		if h.gone {
			return fmt.Errorf("crash: actor %s is gone", name)
		}
		e.crashHost(h, reason)
		return nil
	}
	for _, n := range e.nodes {
		if w := n.workers[name]; w != nil && w.alive {
			e.crashWorker(w, reason)
			return nil
		}
	}
	if p := e.procs[name]; p != nil && p.alive && p.kind == "driver" {
		p.alive = false
		e.printf("%s crashed", name)
		return nil
	}
	return fmt.Errorf("crash: no live node, worker, actor or driver %q", name)
}

func (e *Env) sortedProcs() []*process {
	out := make([]*process, 0, len(e.procs))
	for _, p := range e.procs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (e *Env) sortedHosts() []*host {
	out := make([]*host, 0, len(e.hosts))
	for _, h := range e.hosts {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
