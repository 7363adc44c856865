package cluster

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// One AMM round's snapshot: every live node's inventory, gathered
// concurrently and turned into an amm.Snapshot.

// gather asks every live node for its objects and builds the snapshot.
// A node that does not answer is left out: its copies count for nothing,
// which only makes the round drop less.
func (a *AMM) gather() *ammGathered {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.RequestTimeout)
	defer cancel()
	nodes, err := a.cfg.GCS.ListNodes(ctx)
	if err != nil {
		a.cfg.Logger.Warn("amm: list nodes", "err", err)
		return &ammGathered{snap: &amm.Snapshot{Nodes: map[amm.NodeID]*amm.Node{}, Objects: map[amm.ObjectID]*amm.Object{}}, failed: 1}
	}
	req, _ := proto.Marshal(&atollpb.ListObjectsRequest{GraceMs: a.cfg.ReadGrace.Milliseconds()})
	// A draining node lists more: it may leave only once all its objects
	// are listed.
	drainReq, _ := proto.Marshal(&atollpb.ListObjectsRequest{GraceMs: a.cfg.ReadGrace.Milliseconds(), Limit: drainListLimit})
	a.mu.Lock()
	draining := map[ids.NodeID]bool{}
	for id, d := range a.drains {
		if n, err := nodeIDFromHex(string(id)); err == nil && !d.done {
			draining[n] = true
		}
	}
	a.mu.Unlock()
	alive := map[amm.NodeID]bool{}
	var wg sync.WaitGroup
	replies := make([]*atollpb.NodeObjects, len(nodes))
	for i, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err != nil || n.State != atollpb.NodeState_NODE_ALIVE {
			continue
		}
		alive[amm.NodeID(id.String())] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := req
			if draining[id] {
				body = drainReq
			}
			msg, err := a.cfg.Conn.RequestWithContext(ctx, nodeSubject(a.cfg.Prefix, id, "objects"), body)
			if err != nil {
				return
			}
			var r atollpb.NodeObjects
			if proto.Unmarshal(msg.Data, &r) != nil || ValidNodeObjects(&r, id) != nil {
				return
			}
			replies[i] = &r
		}()
	}
	wg.Wait()
	var got []*atollpb.NodeObjects
	failed := 0
	complete := true
	for i, r := range replies {
		if r != nil {
			got = append(got, r)
			complete = complete && !r.List.Truncated
		} else if nodes[i].State == atollpb.NodeState_NODE_ALIVE {
			failed++
		}
	}
	snap, owners := BuildSnapshot(got)
	a.tracked(snap, complete && failed == 0)
	info := map[amm.NodeID]drainNodeInfo{}
	for _, r := range got {
		if r.Draining {
			info[amm.NodeID(hex.EncodeToString(r.NodeId))] = drainNodeInfo{queued: r.Queued, running: r.Running, truncated: r.List.Truncated}
		}
	}
	return &ammGathered{snap: snap, owners: owners, info: holdings(got), failed: failed, alive: alive, drainInfo: info}
}

// ValidNodeObjects checks the inventory node from answered (to a request
// on its ObjectsSubject) before it is used.
func ValidNodeObjects(r *atollpb.NodeObjects, from ids.NodeID) error {
	id, err := ids.FromBytes(r.NodeId)
	switch {
	case err != nil:
		return err
	case id != from:
		return fmt.Errorf("inventory of node %s answered by %s", from.Short(), id.Short())
	case r.List == nil:
		return fmt.Errorf("inventory without a list")
	case len(r.OwnerNodes) != 0 && len(r.OwnerNodes) != len(r.List.Objects):
		return fmt.Errorf("inventory with %d owner nodes for %d objects", len(r.OwnerNodes), len(r.List.Objects))
	}
	for _, h := range r.List.Objects {
		if err := validObjectID(h.ObjectId); err != nil {
			return err
		}
	}
	return nil
}

// BuildSnapshot turns the nodes' inventories into the AMM's snapshot, and
// the owner node (hex) of each object where a node knew it. A copy's
// flags come from its store: not pulled = primary; pinned; read within
// the grace period; not sealed = being pulled.
func BuildSnapshot(inventories []*atollpb.NodeObjects) (*amm.Snapshot, map[amm.ObjectID]string) {
	s := &amm.Snapshot{Nodes: map[amm.NodeID]*amm.Node{}, Objects: map[amm.ObjectID]*amm.Object{}}
	owners := map[amm.ObjectID]string{}
	for _, r := range inventories {
		node := amm.NodeID(hex.EncodeToString(r.NodeId))
		s.Nodes[node] = &amm.Node{ID: node, Capacity: r.List.CapacityBytes, Used: r.List.UsedBytes, Driver: r.IsDriver, Retiring: r.Draining}
		for i, h := range r.List.Objects {
			id := amm.ObjectID(hex.EncodeToString(h.ObjectId))
			o := s.Objects[id]
			if o == nil {
				o = &amm.Object{ID: id, Size: h.Size}
				s.Objects[id] = o
			}
			o.Copies = append(o.Copies, amm.Copy{Node: node, Primary: !h.Copy, Pinned: h.Pinned, Reading: h.Reading, Pulling: !h.Sealed})
			if i < len(r.OwnerNodes) && r.OwnerNodes[i] != "" {
				owners[id] = r.OwnerNodes[i]
			}
		}
	}
	return s, owners
}

// holdings returns, for each object of the inventories, what a node
// needs to pull it (owner, codec, size): a primary's holding where one is
// listed (the owner recorded there), else any.
func holdings(inventories []*atollpb.NodeObjects) map[amm.ObjectID]*atollpb.ObjectHolding {
	out := map[amm.ObjectID]*atollpb.ObjectHolding{}
	for _, r := range inventories {
		for _, h := range r.List.Objects {
			id := amm.ObjectID(hex.EncodeToString(h.ObjectId))
			if prev := out[id]; prev == nil || (prev.Copy && !h.Copy) {
				out[id] = h
			}
		}
	}
	return out
}
