package sim

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// node is one node of the cluster: its raylet (a raylet.Core), its
// gateway (a cluster.Forwarder and the shell around it), its object
// store (an objectstore.Store and the shell around it), its disk, its
// pool workers and actor hosts, and what its membership believes.
type node struct {
	w    *World
	name string
	id   ids.NodeID
	head bool
	up   bool
	// skew is added to the simulated time to make the node's clock.
	skew time.Duration

	raylet *raylet.Core
	gw     *cluster.Forwarder
	gwPID  *actor.PID
	store  *storeParty
	disk   *disk

	// workers are the pool workers' processes, by worker id; hosts the
	// actor hosts by actor.
	workers map[ids.WorkerID]*slot
	hosts   map[ids.ActorID]*host
	// unreachable: since when each other node has been out of reach;
	// declared: the nodes its membership declared gone; peers: the
	// nodes its gateway has in view (the fetcher pulls only from them).
	unreachable map[*node]time.Time
	declared    map[*node]bool
	peers       map[ids.NodeID]bool
	draining    bool
	// restartAfter, if set, brings a new node up that long after this one
	// crashed (keepDisk: with this one's disk).
	loadSeq uint64
}

// now is the node's clock.
func (n *node) now() time.Time { return n.w.now.Add(n.skew) }

// toGlobal converts a time of the node's clock to simulated time.
func (n *node) toGlobal(t time.Time) time.Time { return t.Add(-n.skew) }

func (w *World) head() *node {
	if len(w.nodes) > 0 && w.nodes[0].up {
		return w.nodes[0]
	}
	return nil
}

// addNode brings a new node up and has the others hear it join.
func (w *World) addNode(d *disk) *node {
	w.nodeSeq++
	name := fmt.Sprintf("n%d", w.nodeSeq)
	n := &node{w: w, name: name, id: w.newID(), head: len(w.nodes) == 0, up: true, workers: map[ids.WorkerID]*slot{},
		hosts: map[ids.ActorID]*host{}, unreachable: map[*node]time.Time{}, declared: map[*node]bool{}, peers: map[ids.NodeID]bool{}}
	n.gwPID = &actor.PID{Address: name, Id: name + ".gw"}
	cpus := w.cfg.CPUs
	n.raylet = raylet.NewCore(raylet.CoreConfig{
		NodeID: n.id, Resources: raylet.Resources{raylet.CPU: cpus}, NumWorkers: int(cpus), MaxWorkers: w.cfg.MaxWorkers,
		IdleTimeout: 10 * time.Second, StoreCapacity: w.cfg.StoreBytes, ArgsFraction: 0.7, Saturation: 1,
		PipelineDepth: w.cfg.PipelineDepth, Cluster: true, SpreadThreshold: 0.5,
		NewWorkerID: w.newID,
	})
	n.gw = cluster.NewForwarder(cluster.ForwarderConfig{Self: n.id, IsHead: n.head, ForwardLease: w.cfg.ForwardLease})
	if d == nil {
		d = newDisk(w, w.cfg.DiskBytes)
	}
	n.disk = d
	n.store = newStoreParty(n)
	w.nodes = append(w.nodes, n)
	w.byNode[n.id] = n
	w.byName[name] = n
	role := ""
	if n.head {
		role = " (head: GCS, AMM)"
	}
	w.log.add("node %s up%s", name, role)
	n.raylet.Start(n.now())
	n.rayletEffects()
	if w.gcs != nil {
		w.gcs.pgNodeUp(n)
	}
	// Gossip: the new node and the others learn each other as members.
	for _, m := range w.liveNodes() {
		m.stepGW(cluster.PeerJoined{Node: n.id})
		if m != n {
			n.stepGW(cluster.PeerJoined{Node: m.id})
		}
	}
	n.publishLoad()
	return n
}

// crash kills the node as a failed machine: its processes, raylet,
// gateway and store are gone; the others learn through membership.
func (n *node) crash(why string) {
	if !n.up {
		return
	}
	w := n.w
	n.up = false
	w.log.add("node %s down: %s", n.name, why)
	for _, p := range w.sortedProcs() {
		if p.node == n && p.alive {
			p.die("its node " + n.name + " died")
		}
	}
	n.store.crash()
	delete(w.net.buffered, n)
	if w.gcs != nil && w.gcs.node == n {
		w.gcs = nil
	}
}

// Membership: every node follows whether it can reach each other one,
// directly or through another node (memberlist's indirect probes), and
// declares one dead that it could not reach for the failure budget.
// Only the head's verdicts reach the GCS; a node that reaches the head
// again and finds itself dead there exits, as a node process does. A
// node declared dead by another that the GCS does not list dead answers
// again once they reach each other (memberlist's refutation), and that
// node has it as a member again.

// reachable reports whether o's membership reaches s.
func (w *World) reachable(o, s *node) bool {
	if !s.up {
		return false
	}
	if w.net.reach(o, s) && w.net.reach(s, o) {
		return true
	}
	for _, m := range w.nodes {
		if m != o && m != s && m.up && w.net.reach(o, m) && w.net.reach(m, o) && w.net.reach(m, s) && w.net.reach(s, m) {
			return true
		}
	}
	return false
}

// membershipTick updates each live node's view of the others.
func (w *World) membershipTick() {
	for _, o := range w.liveNodes() {
		for _, s := range w.nodes {
			if s == o {
				continue
			}
			if o.declared[s] {
				if s.up && (w.gcs == nil || w.gcs.nodes[s.id] != "dead") && w.reachable(o, s) {
					delete(o.declared, s)
					w.log.add("membership %s: %s alive again", o.name, s.name)
					o.stepGW(cluster.PeerJoined{Node: s.id})
				}
				continue
			}
			if w.reachable(o, s) {
				delete(o.unreachable, s)
				continue
			}
			since, ok := o.unreachable[s]
			if !ok {
				o.unreachable[s] = w.now
				continue
			}
			if w.now.Sub(since) >= w.cfg.FailureBudget {
				o.declared[s] = true
				delete(o.unreachable, s)
				w.log.add("membership %s: %s dead", o.name, s.name)
				o.stepGW(cluster.PeerGone{Node: s.id, Died: true})
			}
		}
	}
	// A node that reaches the head again and is dead in the GCS exits.
	if g := w.gcs; g != nil {
		for _, n := range w.liveNodes() {
			if g.nodes[n.id] == "dead" && w.net.reach(n, g.node) && w.net.reach(g.node, n) {
				n.crash("the GCS lists it dead (found on reconnecting): it exits")
				w.faults.nodeExited(n)
			}
		}
	}
}

// publishLoad publishes the node's load to every node (NodeLoad).
func (n *node) publishLoad() {
	if !n.up {
		return
	}
	st := n.raylet.State()
	n.loadSeq++
	ss := n.store.store.Stats()
	for _, to := range n.w.nodes {
		if !to.up {
			continue
		}
		load := &atollpb.NodeLoad{NodeId: n.id.Bytes(), Total: st.Total, Available: st.Available, Queued: int32(st.Queued),
			Running: int32(st.Running), QueuedCpu: st.QueuedCPU, TransferAddress: n.name, IsHead: n.head, Draining: n.draining,
			StoreUsed: ss.UsedBytes, StoreCapacity: ss.CapacityBytes, Seq: n.loadSeq, FreeSeq: n.gw.FreeSeq(), Bundles: st.Bundles, Demands: st.Demands}
		to := to
		n.w.send(&msg{from: n, to: to, fromName: n.name + ".gw", toName: to.name + ".gw", path: pathNATS, kind: "NodeLoad", actor: "gateway",
			desc: n.name, deliver: func() {
				to.stepGW(cluster.Received{Msg: load})
				if g := n.w.gcs; g != nil && g.node == to {
					g.pgLoad(load) // the placement manager follows the reports too
				}
			}})
	}
}

// leaseTick steps the gateway's lease tick.
func (n *node) leaseTick() {
	if n.up {
		n.stepGW(cluster.LeaseTick{})
	}
}

// armTimer runs a raylet timer after d, unless the node died meanwhile.
func (n *node) armTimer(t raylet.Timer, d time.Duration) {
	n.w.after(d, func() {
		if !n.up {
			return
		}
		n.w.log.add("%s timer %d", n.name, t.Kind)
		n.raylet.TimerFired(n.now(), t)
		n.rayletEffects()
	})
}
