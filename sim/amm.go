package sim

import (
	"context"
	"encoding/hex"
	"sort"
	"time"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The Active Memory Manager, on the head, every AMMInterval: it gathers
// the inventories of the nodes it reaches, builds the snapshot
// (cluster.BuildSnapshot), runs the default policies (Replicate, then
// ReduceReplicas) through amm.Run, and enacts the decision as the head's
// AMM does: a replica is the target node's ordinary pull, a drop its
// store's DropCopies (refused for a copy read since the snapshot), and
// the owner's node is told of each copy dropped (ObjectCopies).

// ammRound runs one round.
func (w *World) ammRound() {
	head := w.head()
	if head == nil {
		return
	}
	var invs []*atollpb.NodeObjects
	for _, n := range w.liveNodes() {
		if !w.net.reach(head, n) || !w.net.reach(n, head) {
			continue // it does not answer this round
		}
		list := n.store.store.Inventory(n.now(), time.Second, 1<<16)
		st := n.raylet.State()
		r := &atollpb.NodeObjects{NodeId: n.id.Bytes(), List: list, Draining: n.draining, Queued: int32(st.Queued), Running: int32(st.Running)}
		for _, h := range list.Objects {
			owner := ""
			if p := w.procs[ids.MustFromBytes(h.OwnerId)]; p != nil {
				owner = p.node.id.String()
			}
			r.OwnerNodes = append(r.OwnerNodes, owner)
		}
		invs = append(invs, r)
	}
	snap, owners := cluster.BuildSnapshot(invs)
	d := amm.Run(snap, []amm.Policy{amm.Replicate{}, amm.ReduceReplicas{}}, amm.Limits{})
	if len(d.Replicas)+len(d.Drops) == 0 {
		return
	}
	w.log.add("amm round: %d replicas, %d drops", len(d.Replicas), len(d.Drops))
	holdings := map[amm.ObjectID]*atollpb.ObjectHolding{}
	for _, r := range invs {
		for _, h := range r.List.Objects {
			id := amm.ObjectID(hex.EncodeToString(h.ObjectId))
			if prev := holdings[id]; prev == nil || (prev.Copy && !h.Copy) {
				holdings[id] = h
			}
		}
	}
	for _, r := range d.Replicas {
		target, h := w.ammNode(r.Node), holdings[r.Object]
		if target == nil || h == nil {
			continue
		}
		ref := &atollpb.ObjectRef{ObjectId: h.ObjectId, OwnerId: h.OwnerId, OwnerAddress: owners[r.Object], Codec: h.Codec, Size: h.Size}
		for _, c := range snap.Objects[r.Object].Copies {
			if !c.Pulling && (len(ref.NodeId) == 0 || c.Primary) {
				if n := w.ammNode(c.Node); n != nil {
					ref.NodeId = n.id.Bytes()
				}
			}
		}
		if len(ref.NodeId) == 0 {
			continue
		}
		w.send(&msg{from: head, to: target, fromName: "amm", toName: target.name + ".gw", path: pathNATS, kind: "ReplicateRequest", actor: "gateway",
			desc: ids.MustObjectID(h.ObjectId).Short(), deliver: func() {
				w.spawn(nil, target.name+" replicates "+ids.MustObjectID(h.ObjectId).Short(), func(ctx context.Context) {
					if err := target.fetchOne(ctx, ref); err != nil {
						w.log.add("%s replication of %s: %v", target.name, ids.MustObjectID(h.ObjectId).Short(), err)
					}
				})
			}})
	}
	drops := append([]amm.Suggestion(nil), d.Drops...)
	sort.Slice(drops, func(i, j int) bool {
		return string(drops[i].Node)+string(drops[i].Object) < string(drops[j].Node)+string(drops[j].Object)
	})
	for _, dr := range drops {
		n, h := w.ammNode(dr.Node), holdings[dr.Object]
		if n == nil || h == nil {
			continue
		}
		id := ids.MustObjectID(h.ObjectId)
		owner := w.byNode[nodeOf(owners[dr.Object])]
		w.send(&msg{from: head, to: n, fromName: "amm", toName: n.name + ".gw", path: pathNATS, kind: "DropCopiesRequest", actor: "gateway",
			desc: id.Short(), deliver: func() {
				dropped, _ := n.store.store.DropCopies([]ids.ObjectID{id}, n.now(), time.Second)
				n.store.flush()
				if len(dropped) == 0 || owner == nil {
					return
				}
				w.log.add("%s drops its copy of %s", n.name, id.Short())
				n.publish(owner, "copy", id.Short()+" dropped", &atollpb.ObjectCopies{ObjectId: id.Bytes(), NodeIds: [][]byte{n.id.Bytes()}, Dropped: true})
			}})
	}
}

// ammNode is the node an amm.NodeID (hex) names.
func (w *World) ammNode(id amm.NodeID) *node {
	return w.byNode[nodeOf(string(id))]
}

func nodeOf(h string) ids.NodeID {
	b, err := hex.DecodeString(h)
	if err != nil {
		return ids.NodeID{}
	}
	id, _ := ids.FromBytes(b)
	return id
}
