package interaction

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Draining, as the head's AMM does it (ARCHITECTURE.md "Draining a
// node"): `drain n2` asks the node to drain (its raylet places new work
// elsewhere, its load reports say draining); each `amm-round` gathers the
// live nodes' inventories (Store.Inventory), builds the snapshot
// (cluster.BuildSnapshot), runs RetireNode through amm.Run (Decide's
// guarantees), enacts the replicas as pulls and the drops with
// Store.DropCopies, then plays the drain step: a draining node whose
// every object has a complete copy on a node that stays
// (cluster.SafeElsewhere) and whose raylet is idle is asked to leave; the
// node checks again and leaves: its store goes with it, and its peers
// hear it leave (NodeLoad.leaving).

type drainReq struct{}

// cmdDrain: drain n2.
func (e *Env) cmdDrain(c Cmd) error {
	n, err := e.nodeArg(c.pos(0))
	if err != nil {
		return err
	}
	if n.head {
		return fmt.Errorf("drain: %s is the head", n.name)
	}
	e.send(e.amm(), n.gwParty(), "drain", n.name, &drainReq{})
	return nil
}

func (e *Env) hexNode(id amm.NodeID) *node {
	b, err := hex.DecodeString(string(id))
	if err != nil {
		return nil
	}
	n, err := ids.FromBytes(b)
	if err != nil {
		return nil
	}
	return e.nodeByID(n)
}

func hexObject(id amm.ObjectID) ids.ObjectID {
	b, _ := hex.DecodeString(string(id))
	return ids.MustObjectID(b)
}

func (e *Env) procByID(id ids.WorkerID) *process {
	for _, p := range e.sortedProcs() {
		if p.id == id {
			return p
		}
	}
	return nil
}

// ammRound runs one AMM round over the nodes that answer (live, not cut
// off from the head).
func (e *Env) ammRound() {
	var invs []*atollpb.NodeObjects
	holdings := map[ids.ObjectID]*atollpb.ObjectHolding{}
	for _, n := range e.nodes {
		if !n.up() || e.cut[n] {
			continue
		}
		list := e.inventory(n)
		st := n.raylet.State()
		r := &atollpb.NodeObjects{NodeId: n.id.Bytes(), List: list, Draining: n.draining, Queued: int32(st.Queued), Running: int32(st.Running)}
		for _, h := range list.Objects {
			owner := ""
			if p := e.procByID(ids.MustFromBytes(h.OwnerId)); p != nil {
				owner = p.node.id.String()
			}
			r.OwnerNodes = append(r.OwnerNodes, owner)
			if prev := holdings[ids.MustObjectID(h.ObjectId)]; prev == nil || (prev.Copy && !h.Copy) {
				holdings[ids.MustObjectID(h.ObjectId)] = h
			}
		}
		invs = append(invs, r)
	}
	snap, _ := cluster.BuildSnapshot(invs)
	var policies []amm.Policy
	for _, n := range snap.Nodes {
		if n.Retiring {
			policies = []amm.Policy{amm.RetireNode{}}
		}
	}
	for _, o := range sortedObjects(snap) {
		var cs []string
		for _, c := range o.Copies {
			s := e.hexNode(c.Node).name
			var flags []string
			if c.Primary {
				flags = append(flags, "primary")
			}
			if c.Pulling {
				flags = append(flags, "pulling")
			}
			if c.Pinned {
				flags = append(flags, "pinned")
			}
			if n := snap.Nodes[c.Node]; n.Retiring {
				flags = append(flags, "retiring")
			}
			if len(flags) > 0 {
				s += "(" + strings.Join(flags, ",") + ")"
			}
			cs = append(cs, s)
		}
		e.printf("amm: %s on [%s]", e.oname(hexObject(o.ID)), strings.Join(cs, " "))
	}
	d := amm.Run(snap, policies, amm.Limits{})
	for _, r := range d.Replicas {
		target := e.hexNode(r.Node)
		id := hexObject(r.Object)
		h := holdings[id]
		ref := objRef{id: id, size: h.Size, codec: h.Codec, owner: ids.MustFromBytes(h.OwnerId)}
		if p := e.procByID(ref.owner); p != nil {
			ref.ownerNode = p.node.id
		}
		// Pull from the primary if listed, else a complete copy.
		for _, c := range snap.Objects[r.Object].Copies {
			if !c.Pulling && (ref.primary.IsZero() || c.Primary) {
				ref.primary = e.hexNode(c.Node).id
			}
		}
		e.printf("amm: replicate %s to %s", e.oname(id), target.name)
		e.nested(func() { e.startPull(target, ref, nil) })
	}
	for _, dr := range d.Drops {
		n := e.hexNode(dr.Node)
		id := hexObject(dr.Object)
		dropped, _ := n.store.DropCopies([]ids.ObjectID{id}, e.now, 0)
		e.printf("amm: drop %s on %s: dropped %s", e.oname(id), n.name, e.onameList(dropped))
		if p := e.procByID(ids.MustFromBytes(holdings[id].OwnerId)); p != nil && len(dropped) > 0 {
			e.nested(func() {
				e.send(e.amm(), p.node.gwParty(), "copy", fmt.Sprintf("%s on [%s] dropped", e.oname(id), n.name),
					&atollpb.ObjectCopies{ObjectId: id.Bytes(), NodeIds: [][]byte{n.id.Bytes()}, Dropped: true})
			})
		}
	}
	var refused []string
	for why, n := range d.Refused {
		refused = append(refused, fmt.Sprintf("%s=%d", why, n))
	}
	sort.Strings(refused)
	if len(refused) > 0 {
		e.printf("amm: refused %s", strings.Join(refused, " "))
	}
	e.drainStep(snap, d.Drops)
}

func sortedObjects(s *amm.Snapshot) []*amm.Object {
	out := make([]*amm.Object, 0, len(s.Objects))
	for _, o := range s.Objects {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// drainStep asks each draining node that is ready to leave (the AMM's
// drainStep).
func (e *Env) drainStep(snap *amm.Snapshot, drops []amm.Suggestion) {
	dropped := map[amm.ObjectID]bool{}
	for _, d := range drops {
		if n := snap.Nodes[d.Node]; n != nil && !n.Retiring {
			dropped[d.Object] = true
		}
	}
	for _, n := range e.nodes {
		if !n.draining || !n.up() || snap.Nodes[amm.NodeID(n.id.String())] == nil {
			continue
		}
		held := map[ids.ObjectID]bool{}
		left := 0
		for _, o := range snap.Objects {
			if _, ok := o.Copy(amm.NodeID(n.id.String())); !ok {
				continue
			}
			held[hexObject(o.ID)] = true
			if !cluster.SafeElsewhere(snap, o) || dropped[o.ID] {
				left++
			}
		}
		st := n.raylet.State()
		switch {
		case left > 0:
			e.printf("amm: drain of %s: %d objects have no complete copy elsewhere yet", n.name, left)
		case st.Queued+st.Running > 0:
			e.printf("amm: drain of %s: waiting for its tasks (%d queued, %d running)", n.name, st.Queued, st.Running)
		default:
			e.printf("amm: drain of %s: every object is safe elsewhere: asks it to leave", n.name)
			e.nested(func() { e.send(e.amm(), n.gwParty(), "leave", e.onameList(keys(held)), &leaveReq{held: held}) })
		}
	}
}

// leave is a drained node's answer to a leave request: it checks again,
// then leaves the cluster, its store with it.
func (e *Env) leave(n *node, req *leaveReq) {
	st := n.raylet.State()
	busy := ""
	if !n.draining {
		busy = "not draining"
	} else if st.Queued+st.Running > 0 {
		busy = fmt.Sprintf("%d tasks queued, %d running", st.Queued, st.Running)
	}
	for _, h := range e.inventory(n).Objects {
		if id := ids.MustObjectID(h.ObjectId); busy == "" && !req.held[id] {
			busy = e.oname(id) + " has no copy on another node yet"
		}
	}
	if busy != "" {
		e.printf("%s: stays: %s", n.name, busy)
		return
	}
	n.left = true
	for _, p := range e.sortedProcs() {
		if p.node == n {
			p.alive = false
		}
	}
	for _, h := range e.sortedHosts() {
		if h.node == n {
			h.gone = true
		}
	}
	for _, w := range n.workers {
		w.alive = false
	}
	e.gcs.nodes[n.id] = "left"
	e.printf("%s: leaves the cluster, drained (its store goes with it)", n.name)
	for _, to := range e.nodes {
		if to != n {
			e.send(n.gwParty(), to.gwParty(), "load", n.name+" leaving", &atollpb.NodeLoad{NodeId: n.id.Bytes(), Leaving: true})
		}
		to.declared[n] = true // the leave is its membership's news too
	}
}

// cmdWhere: where o1: its owner's view and the stores holding it.
func (e *Env) cmdWhere(c Cmd) error {
	id := e.object(c.pos(0))
	for _, p := range e.sortedProcs() {
		if !p.alive {
			continue
		}
		if v, _, _, ok := p.table.Lookup(id); ok && !p.table.Borrowed(id) {
			at := "pending"
			switch {
			case v.GetStored() != nil:
				at = "stored on " + e.name(v.GetStored().NodeId)
			case v.GetError() != nil:
				at = "error " + v.GetError().Code.String()
			case v != nil:
				at = "inline"
			}
			e.printf("%s: owner %s: %s", c.pos(0), p.name, at)
		}
	}
	for _, n := range e.nodes {
		switch {
		case n.crashed:
			continue
		case n.left:
			continue
		}
		for _, h := range e.inventory(n).Objects {
			if ids.MustObjectID(h.ObjectId) != id {
				continue
			}
			kind := "primary"
			if h.Copy {
				kind = "copy"
			}
			if !h.Sealed {
				kind += " unsealed"
			}
			if h.Pinned {
				kind += " pinned"
			}
			e.printf("%s: %s holds a %s", c.pos(0), n.store_(), kind)
		}
	}
	return nil
}
