package sim

import (
	"context"
	"encoding/hex"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/placement"
)

// The GCS, on the head: the actor table (states the raylets report,
// published to every node, whose processes hear them; live names) and
// the dead nodes the head's gateway reports, with the rules of
// internal/gcs's tables (a dead actor stays dead; a dead node's actors
// die with it). Processes reach it over NATS; a request whose answer does
// not come within rpcTimeout fails as unavailable.

type gcs struct {
	w      *World
	node   *node
	actors map[ids.ActorID]*atollpb.ActorInfo
	names  map[string]ids.ActorID
	nodes  map[ids.NodeID]string // "dead" or "left"

	// Placement groups (placement.go): the manager, the nodes it
	// believes live, the waits it holds.
	pg        *placement.Manager
	pgAlive   map[ids.NodeID]bool
	pgWaiters map[ids.ID16][]*pgWaiter
}

func newGCS(w *World, n *node) *gcs {
	g := &gcs{w: w, node: n, actors: map[ids.ActorID]*atollpb.ActorInfo{}, names: map[string]ids.ActorID{}, nodes: map[ids.NodeID]string{}}
	g.pgStart()
	return g
}

func nameKey(namespace, name string) string { return namespace + "\x00" + name }

// gcsReport sends an actor's new state from a raylet to the GCS.
func (w *World) gcsReport(from *node, info *atollpb.ActorInfo) {
	g := w.gcs
	if g == nil {
		return
	}
	to := g.node
	w.send(&msg{from: from, to: to, fromName: from.name, toName: "gcs", path: pathNATS, kind: "ActorInfo", actor: "gcs",
		desc: ids.MustFromBytes(info.ActorId).Short() + " " + info.State.String(), deliver: func() { g.update(info) }})
}

// update applies an actor's new state and publishes it.
func (g *gcs) update(info *atollpb.ActorInfo) {
	id := ids.MustFromBytes(info.ActorId)
	old := g.actors[id]
	if old != nil && old.State == atollpb.ActorState_ACTOR_DEAD {
		return
	}
	next := proto.CloneOf(info)
	if old != nil {
		// A report carries the hosting raylet's view; the registration's
		// name, namespace, owner and job stand.
		next.Name, next.Namespace, next.OwnerId, next.JobId = old.Name, old.Namespace, old.OwnerId, old.JobId
		if next.ActorType == "" {
			next.ActorType = old.ActorType
		}
	}
	g.actors[id] = next
	if next.State == atollpb.ActorState_ACTOR_DEAD && next.Name != "" {
		if g.names[nameKey(next.Namespace, next.Name)] == id {
			delete(g.names, nameKey(next.Namespace, next.Name))
		}
	}
	g.w.check.actorState(next)
	g.publish(next)
}

// publish sends an actor event to every node, whose processes hear it.
func (g *gcs) publish(info *atollpb.ActorInfo) {
	w := g.w
	for _, to := range w.liveNodes() {
		to := to
		w.send(&msg{from: g.node, to: to, fromName: "gcs", toName: to.name, path: pathNATS, kind: "ActorInfo", actor: "owner",
			desc: ids.MustFromBytes(info.ActorId).Short() + " " + info.State.String(), deliver: func() {
				for _, p := range w.sortedProcs() {
					if p.alive && p.node == to {
						p.rt.SimDeliver(info)
					}
				}
			}})
	}
}

// gcsNodeDead records a node's death the head's gateway reported: its
// actors die with it. As internal/gcs's, a death reported again (the
// gateway sends a report again until it is answered) keeps the first
// state and updates the actors still live there; the answer goes back to
// the gateway (cluster.ReportAnswered).
func (w *World) gcsNodeDead(from *node, node ids.NodeID, left bool) {
	g := w.gcs
	if g == nil {
		return
	}
	w.send(&msg{from: from, to: g.node, fromName: from.name + ".gw", toName: "gcs", path: pathNATS, kind: "MarkNodeDead", actor: "gcs", desc: node.Short(),
		deliver: func() {
			defer w.send(&msg{from: g.node, to: from, fromName: "gcs", toName: from.name + ".gw", path: pathNATS, kind: "MarkNodeDeadReply", actor: "gateway",
				desc: node.Short(), deliver: func() { from.stepGW(cluster.ReportAnswered{Node: node}) }})
			if g.nodes[node] == "" {
				state := "dead"
				if left {
					state = "left"
				}
				g.nodes[node] = state
				w.log.add("gcs: node %s %s", node.Short(), state)
				g.pgNodeDown(node, left)
			}
			for _, id := range sortedActorIDs(g.actors) {
				a := g.actors[id]
				if a.State != atollpb.ActorState_ACTOR_DEAD && string(a.NodeId) == string(node.Bytes()) {
					next := proto.CloneOf(a)
					next.State = atollpb.ActorState_ACTOR_DEAD
					next.DeathCause = errs.ToProto(&errs.NodeDiedError{NodeID: hex.EncodeToString(node.Bytes()), Message: "the actor's node died"})
					g.update(next)
				}
			}
		}})
}

func sortedActorIDs(m map[ids.ActorID]*atollpb.ActorInfo) []ids.ActorID {
	out := make([]ids.ActorID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sortBy(out, func(id ids.ActorID) string { return string(id[:]) })
	return out
}

// gcsClient is a process's GCS client (runtime.SimGCS).
type gcsClient struct{ p *proc }

// call runs f at the GCS and parks the calling thread for its answer.
func (c *gcsClient) call(kind string, f func() (*atollpb.ActorInfo, error)) (*atollpb.ActorInfo, error) {
	w, p := c.p.w, c.p
	g := w.gcs
	if g == nil || !p.alive {
		return nil, errs.Unavailablef("the GCS is not reachable")
	}
	type answer struct {
		info *atollpb.ActorInfo
		err  error
	}
	var out answer
	ok := w.rpc(p.node, g.node, pathNATS, p.name, "gcs", "GcsRequest", "gcs", kind, func(reply func(any)) {
		info, err := f()
		if info != nil {
			info = proto.CloneOf(info)
		}
		reply(answer{info, err})
	}, func(v any) { out = v.(answer) })
	if !ok {
		return nil, errs.Unavailablef("the GCS did not answer %s within %v", kind, rpcTimeout)
	}
	return out.info, out.err
}

func (c *gcsClient) RegisterActor(_ context.Context, info *atollpb.ActorInfo) error {
	g := c.p.w.gcs
	info = proto.CloneOf(info)
	_, err := c.call("register-actor", func() (*atollpb.ActorInfo, error) {
		id := ids.MustFromBytes(info.ActorId)
		if info.Name != "" {
			k := nameKey(info.Namespace, info.Name)
			if other, ok := g.names[k]; ok && other != id {
				return nil, errs.Invalidf("an actor named %q already exists in namespace %q", info.Name, info.Namespace)
			}
			g.names[k] = id
		}
		if g.actors[id] == nil {
			g.actors[id] = info
		}
		return nil, nil
	})
	return err
}

func (c *gcsClient) GetNamedActor(_ context.Context, namespace, name string) (*atollpb.ActorInfo, error) {
	g := c.p.w.gcs
	return c.call("get-named-actor", func() (*atollpb.ActorInfo, error) {
		id, ok := g.names[nameKey(namespace, name)]
		if !ok {
			return nil, errs.NotFoundf("no actor named %q in namespace %q", name, namespace)
		}
		return g.actors[id], nil
	})
}

func (c *gcsClient) GetActor(_ context.Context, actorID []byte) (*atollpb.ActorInfo, error) {
	g := c.p.w.gcs
	return c.call("get-actor", func() (*atollpb.ActorInfo, error) {
		id, err := ids.FromBytes(actorID)
		if err != nil || g.actors[id] == nil {
			return nil, errs.NotFoundf("no actor %x", actorID)
		}
		return g.actors[id], nil
	})
}

// Do serves the requests a runtime sends by op: an actor's new state
// (an owner reporting the death of an actor whose restart failed) and
// the placement groups' (placement.go). The simulated GCS has no
// autoscaler: resource requests fail with INVALID_ARGUMENT.
func (c *gcsClient) Do(_ context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	switch op := req.Op.(type) {
	case *atollpb.GcsRequest_UpdateActor:
		g, info := c.p.w.gcs, proto.CloneOf(op.UpdateActor)
		_, err := c.call("update-actor", func() (*atollpb.ActorInfo, error) {
			g.update(info)
			return nil, nil
		})
		if err != nil {
			return nil, err
		}
		return &atollpb.GcsReply{}, nil
	case *atollpb.GcsRequest_CreatePlacementGroup, *atollpb.GcsRequest_RemovePlacementGroup, *atollpb.GcsRequest_GetPlacementGroup,
		*atollpb.GcsRequest_ListPlacementGroups, *atollpb.GcsRequest_WaitPlacementGroup:
		return c.placementGCS(req)
	}
	return nil, errs.Invalidf("the simulator does not serve the GCS request %T (resource requests are not simulated)", req.Op)
}
