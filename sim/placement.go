package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/placement"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Placement groups. The GCS on the head runs the placement manager (a
// placement.Manager, the state machine the real GCS's placement actor
// shells): creations, removals, reads and waits come to it over NATS as
// GcsRequests; the two-phase commit's steps go over NATS to the nodes'
// raylets (raylet.ApplyBundleOp, as a node process applies them) and
// their answers come back; a node that is not up answers no one, as NATS
// answers a request with no responder, at once; each node's load report
// lists the bundles it holds, which the manager reconciles; a node the
// head's gateway reports dead is gone; a removal is published to every
// node, whose raylet fails the group's waiting tasks. The manager's
// entries live in memory only: a crashed head's GCS is gone, as the
// simulator's GCS is (the real one reloads them from its store).

const (
	// pgTick is how often the manager's timers are looked at (the real
	// placement actor's default).
	pgTick = 100 * time.Millisecond
	// pgMaxWait bounds a wait held at the GCS below the simulated
	// request's timeout (rpcTimeout): a wait is answered with the group
	// as it is, and the runtime asks again.
	pgMaxWait = time.Second
)

// pgWaiter is a wait for a group held at the GCS.
type pgWaiter struct {
	answer func(*atollpb.GcsReply, error)
	done   bool
}

// pgStart gives the new GCS the nodes already up.
func (g *gcs) pgStart() {
	g.pg = placement.New(placement.Config{})
	g.pgAlive = map[ids.NodeID]bool{}
	g.pgWaiters = map[ids.ID16][]*pgWaiter{}
	now := g.node.now()
	for _, n := range g.w.liveNodes() {
		g.pgNodeUp(n)
	}
	g.pg.Synced(now)
	g.applyPG()
}

// pgNodeUp tells the manager of a node that joined (the GCS's node table:
// its total resources).
func (g *gcs) pgNodeUp(n *node) {
	if g.nodes[n.id] != "" {
		return
	}
	g.pgAlive[n.id] = true
	g.pg.NodeUp(g.node.now(), n.id, n.raylet.State().Total, nil, false, nil)
	g.applyPG()
}

// pgNodeDown tells the manager a node died or left.
func (g *gcs) pgNodeDown(id ids.NodeID, left bool) {
	if !g.pgAlive[id] {
		return
	}
	delete(g.pgAlive, id)
	g.pg.NodeDown(g.node.now(), id, left)
	g.applyPG()
}

// pgLoad gives the manager a node's load report.
func (g *gcs) pgLoad(l *atollpb.NodeLoad) {
	id := ids.MustFromBytes(l.NodeId)
	if !g.pgAlive[id] || l.Leaving || l.Total == nil {
		return
	}
	held := l.Bundles
	if held == nil {
		held = []*atollpb.BundleHeld{}
	}
	g.pg.NodeUp(g.node.now(), id, raylet.Resources(l.Total), raylet.Resources(l.Available), l.Draining, held)
	g.pg.Waiting(g.node.now(), id, raylet.GroupsWaiting(l.Demands))
	g.applyPG()
}

// pgTickNow steps the manager's timers and expires nothing else (waits
// expire by their own timers).
func (g *gcs) pgTickNow() {
	if live, _, txns := g.pg.Sizes(); live+txns == 0 {
		return
	}
	g.pg.Tick(g.node.now())
	g.applyPG()
}

// servePG serves one placement-group request at the GCS, as the real
// placement actor does; answer is called once (a wait's later).
func (g *gcs) servePG(req *atollpb.GcsRequest, answer func(*atollpb.GcsReply, error)) {
	now := g.node.now()
	defer g.applyPG()
	one := func(info *atollpb.PlacementGroupInfo) {
		answer(&atollpb.GcsReply{PlacementGroups: []*atollpb.PlacementGroupInfo{proto.CloneOf(info)}}, nil)
	}
	switch op := req.Op.(type) {
	case *atollpb.GcsRequest_CreatePlacementGroup:
		next, err := g.pg.CheckCreate(now, op.CreatePlacementGroup)
		if err != nil {
			answer(nil, err)
			return
		}
		if next != nil {
			g.pg.Create(now, next)
		}
		one(g.pg.Group(ids.MustFromBytes(op.CreatePlacementGroup.PlacementGroupId)))
	case *atollpb.GcsRequest_RemovePlacementGroup:
		id, err := ids.FromBytes(op.RemovePlacementGroup)
		if err != nil {
			answer(nil, errs.Invalidf("placement: malformed group id"))
			return
		}
		switch err := g.pg.CheckRemove(id); {
		case errors.Is(err, placement.ErrAlreadyRemoved):
			one(g.pg.Group(id))
		case err != nil:
			answer(nil, err)
		default:
			g.pg.Remove(now, id, "removed")
			one(g.pg.Group(id))
		}
	case *atollpb.GcsRequest_GetPlacementGroup:
		info, err := g.pg.Lookup(op.GetPlacementGroup)
		if err != nil {
			answer(nil, err)
			return
		}
		one(info)
	case *atollpb.GcsRequest_ListPlacementGroups:
		answer(&atollpb.GcsReply{PlacementGroups: g.pg.List()}, nil)
	case *atollpb.GcsRequest_WaitPlacementGroup:
		r := op.WaitPlacementGroup
		info, err := g.pg.ByID(r.GetPlacementGroupId())
		switch {
		case err != nil:
			answer(nil, err)
		case placement.Settled(info) || r.GetTimeoutMs() <= 0:
			one(info)
		default:
			id := ids.MustFromBytes(info.PlacementGroupId)
			wt := &pgWaiter{answer: answer}
			g.pgWaiters[id] = append(g.pgWaiters[id], wt)
			wait := min(time.Duration(r.GetTimeoutMs())*time.Millisecond, pgMaxWait)
			g.w.after(wait, func() {
				if wt.done || g.w.gcs != g {
					return
				}
				wt.done = true
				g.pgWaiters[id] = slices.DeleteFunc(g.pgWaiters[id], func(o *pgWaiter) bool { return o == wt })
				if len(g.pgWaiters[id]) == 0 {
					delete(g.pgWaiters, id)
				}
				if info := g.pg.Group(id); info != nil {
					one(info)
				} else {
					answer(nil, errs.NotFoundf("placement group %s not found", id.Short()))
				}
			})
		}
	default:
		answer(nil, errs.Invalidf("placement: %T is not a placement-group request", req.Op))
	}
}

// applyPG carries out the manager's effects.
func (g *gcs) applyPG() {
	w := g.w
	for _, e := range g.pg.Effects() {
		switch e := e.(type) {
		case placement.Send:
			g.sendBundleOp(e.Node, e.Op)
		case placement.Persist, placement.Forget:
			// The simulated GCS keeps its entries in memory only.
		case placement.Notify:
			if to := w.byNode[e.Node]; to != nil && to.up {
				g.tellRemoved(to, ids.MustFromBytes(e.Info.PlacementGroupId), e.Info.Reason)
			}
		case placement.Changed:
			info := e.Info
			id := ids.MustFromBytes(info.PlacementGroupId)
			w.log.add("gcs: placement group %s %s %q", id.Short(), info.State, info.Reason)
			if info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
				g.publishRemoved(id, info.Reason)
			}
			if placement.Settled(info) {
				for _, wt := range g.pgWaiters[id] {
					wt.done = true
					wt.answer(&atollpb.GcsReply{PlacementGroups: []*atollpb.PlacementGroupInfo{proto.CloneOf(info)}}, nil)
				}
				delete(g.pgWaiters, id)
			}
		}
	}
}

// sendBundleOp sends a step of the two-phase commit to a node's raylet;
// its answer comes back to the manager.
func (g *gcs) sendBundleOp(node ids.NodeID, op *atollpb.BundleOp) {
	w := g.w
	desc := fmt.Sprintf("%s txn=%d bundles=%d", op.Kind, op.Txn, len(op.Bundles))
	to := w.byNode[node]
	if to == nil || !to.up {
		// No responder: NATS answers the request with an error at once.
		w.after(time.Millisecond, func() {
			if w.gcs != g {
				return
			}
			g.pg.Reply(g.node.now(), node, op.Txn, "", errs.Unavailablef("node %s does not answer (dead or not in the cluster)", node.Short()))
			g.applyPG()
		})
		return
	}
	op = proto.CloneOf(op)
	w.send(&msg{from: g.node, to: to, fromName: "gcs", toName: to.name, path: pathNATS, kind: "BundleOp", actor: "raylet", desc: desc,
		deliver: func() {
			if !to.up || string(op.NodeId) != string(to.id.Bytes()) {
				return
			}
			reply := raylet.ApplyBundleOp(to.raylet, to.now(), op)
			to.rayletEffects()
			w.send(&msg{from: to, to: g.node, fromName: to.name, toName: "gcs", path: pathNATS, kind: "BundleOpReply", actor: "gcs", desc: desc,
				deliver: func() {
					if w.gcs != g {
						return
					}
					var err error
					if e := reply.GetError(); e != nil {
						err = errs.FromProto(e)
					}
					g.pg.Reply(g.node.now(), to.id, reply.GetTxn(), reply.GetRefused(), err)
					g.applyPG()
				}})
		}})
}

// publishRemoved tells every node a group was removed: its raylet fails
// the group's waiting tasks.
func (g *gcs) publishRemoved(id ids.ID16, reason string) {
	for _, to := range g.w.liveNodes() {
		g.tellRemoved(to, id, reason)
	}
}

// tellRemoved tells one node's raylet a group was removed (a Notify: the
// node missed the publication).
func (g *gcs) tellRemoved(to *node, id ids.ID16, reason string) {
	g.w.send(&msg{from: g.node, to: to, fromName: "gcs", toName: to.name, path: pathNATS, kind: "PlacementGroupInfo", actor: "raylet",
		desc: id.Short() + " removed", deliver: func() {
			to.raylet.PlacementGroupRemoved(to.now(), id, reason)
			to.rayletEffects()
		}})
}

// placementGCS is the process's placement-group requests: served by the
// GCS, answered over NATS within rpcTimeout.
func (c *gcsClient) placementGCS(req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	w, p := c.p.w, c.p
	g := w.gcs
	if g == nil || !p.alive {
		return nil, errs.Unavailablef("the GCS is not reachable")
	}
	req = proto.CloneOf(req)
	kind := fmt.Sprintf("%T", req.Op)
	type answer struct {
		reply *atollpb.GcsReply
		err   error
	}
	var out answer
	ok := w.rpc(p.node, g.node, pathNATS, p.name, "gcs", "GcsRequest", "gcs", kind, func(reply func(any)) {
		g.servePG(req, func(r *atollpb.GcsReply, err error) {
			if g.node.up {
				reply(answer{r, err})
			}
		})
	}, func(v any) { out = v.(answer) })
	if !ok {
		return nil, errs.Unavailablef("the GCS did not answer %s within %v", kind, rpcTimeout)
	}
	return out.reply, out.err
}

// checkPlacement is the final placement checker: every bundle a live
// raylet holds is committed there by a group the manager has placed
// there, and every bundle of a created group is held, committed, where
// the manager placed it.
func (w *World) checkPlacement() {
	g := w.gcs
	if g == nil || g.pg == nil {
		return
	}
	held := map[string]bool{}
	for _, n := range w.liveNodes() {
		for _, b := range n.raylet.Bundles() {
			pg := ids.MustFromBytes(b.PlacementGroupId)
			key := fmt.Sprintf("%s/%d@%s", pg.Short(), b.Index, n.name)
			held[key] = b.Committed
			info := g.pg.Group(pg)
			switch {
			case info == nil || info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED:
				w.fail("placement", "%s holds bundle %d of group %s at the end, which the GCS does not have live", n.name, b.Index, pg.Short())
				return
			case int(b.Index) >= len(info.BundleNodes) || string(info.BundleNodes[b.Index]) != string(n.id.Bytes()):
				w.fail("placement", "%s holds bundle %d of group %s (%s) at the end, which the GCS placed elsewhere", n.name, b.Index, pg.Short(), info.State)
				return
			case !b.Committed:
				w.fail("placement", "%s holds bundle %d of group %s prepared, not committed, at the end", n.name, b.Index, pg.Short())
				return
			}
		}
	}
	for _, info := range g.pg.List() {
		if info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED {
			continue
		}
		pg := ids.MustFromBytes(info.PlacementGroupId)
		for i, nb := range info.BundleNodes {
			n := w.byNode[ids.MustFromBytes(nb)]
			if n == nil || !n.up || !held[fmt.Sprintf("%s/%d@%s", pg.Short(), i, n.name)] {
				w.fail("placement", "group %s is created with bundle %d on %s, which does not hold it committed at the end", pg.Short(), i, ids.MustFromBytes(nb).Short())
				return
			}
		}
	}
}
