package interaction

import (
	"fmt"
	"sort"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The GCS party. The GCS (internal/gcs) has no pure core: its tables are
// served by an actor over JetStream KV. This is a small table with the
// same messages: actor states reported by raylets (ReportActor), published
// to the processes that hold a handle to the actor (the owner actors'
// subscription), and node deaths reported by the head's gateway
// (ReportDead) or by the AMM when a drained node leaves.

type gcs struct {
	node   *node
	actors map[ids.ActorID]*atollpb.ActorInfo
	nodes  map[ids.NodeID]string // "dead" or "left"
}

func newGCS(n *node) *gcs {
	return &gcs{node: n, actors: map[ids.ActorID]*atollpb.ActorInfo{}, nodes: map[ids.NodeID]string{}}
}

func (g *gcs) party() party { return party{kind: kGCS, node: g.node, name: "gcs"} }

// amm is the head's AMM, which sends drain and leave requests.
func (e *Env) amm() party { return party{kind: kGCS, node: e.gcs.node, name: "amm"} }

func (e *Env) toGCS(m *message) {
	g := e.gcs
	switch b := m.body.(type) {
	case *atollpb.ActorInfo:
		id := ids.MustFromBytes(b.ActorId)
		if old := g.actors[id]; old != nil && old.State == atollpb.ActorState_ACTOR_DEAD {
			e.printf("gcs: %s is dead already: ignored", e.name(b.ActorId))
			return
		}
		g.actors[id] = b
		e.printf("gcs: %s", e.actorInfo(b))
		for _, p := range e.sortedProcs() {
			if p.alive && p.table.HasActor(id) {
				e.send(g.party(), p.party(), "actor-event", e.actorInfo(b), b)
			}
		}
	case cluster.ReportDead:
		if g.nodes[b.Node] == "left" {
			e.printf("gcs: %s left already", e.name(b.Node.Bytes()))
			return
		}
		g.nodes[b.Node] = "dead"
		e.printf("gcs: %s dead", e.name(b.Node.Bytes()))
	default:
		panic(fmt.Sprintf("interaction: gcs message %T", m.body))
	}
}

func (e *Env) actorInfo(info *atollpb.ActorInfo) string {
	s := fmt.Sprintf("%s %s restarts=%d", e.name(info.ActorId), info.State, info.NumRestarts)
	if info.State == atollpb.ActorState_ACTOR_DEAD && info.DeathCause != nil {
		s += fmt.Sprintf(" (%s)", e.unhex(info.DeathCause.Message))
	}
	return s
}

// gcsState prints the GCS's tables.
func (e *Env) gcsState() {
	g := e.gcs
	var actors []string
	for id, info := range g.actors {
		actors = append(actors, e.name(id.Bytes())+": "+e.actorInfo(info))
	}
	sort.Strings(actors)
	for _, a := range actors {
		e.printf("gcs actor %s", a)
	}
	var nodes []string
	for id, st := range g.nodes {
		nodes = append(nodes, e.name(id.Bytes())+" "+st)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		e.printf("gcs node %s", n)
	}
}
