package clusterclient

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// AMMStatus is the head's Active Memory Manager as `atoll amm status`
// shows it.
type AMMStatus struct {
	// Enabled: its policies run every Interval.
	Enabled  bool          `json:"enabled"`
	Interval time.Duration `json:"interval_ns"`
	Policies []string      `json:"policies"`
	Rounds   uint64        `json:"rounds"`
	// The last round's snapshot: nodes, objects and their copies.
	Nodes   int `json:"nodes"`
	Objects int `json:"objects"`
	Copies  int `json:"copies"`
	// Copies dropped, created and moved (Rebalance) since the head
	// started; ReplicasNoFit and ReplicateFailed count the creations that
	// did not happen.
	Dropped         uint64 `json:"dropped"`
	Replicated      uint64 `json:"replicated"`
	Moved           uint64 `json:"moved"`
	ReplicasNoFit   uint64 `json:"replicas_no_fit"`
	ReplicateFailed uint64 `json:"replicate_failed"`
	// Tracked is the number of objects with a replica count (SetReplicas).
	Tracked int `json:"tracked"`
	// Refused counts the suggestions the enactor refused, by reason.
	Refused map[string]uint64 `json:"refused"`
	Drains  []DrainStatus     `json:"drains"`
}

// DrainStatus is one node being drained (or drained lately).
type DrainStatus struct {
	NodeID string    `json:"node_id"`
	Start  time.Time `json:"start"`
	// ObjectsLeft (BytesLeft) have no copy on a node that stays yet.
	ObjectsLeft int    `json:"objects_left"`
	BytesLeft   uint64 `json:"bytes_left"`
	Queued      int    `json:"queued"`
	Running     int    `json:"running"`
	// State: "counting objects" (the counts are not known yet), "moving
	// objects", "waiting for its tasks", "leaving", "left", or what it
	// waits for.
	State string `json:"state"`
}

func ammStatusFromProto(p *atollpb.AMMStatus) *AMMStatus {
	st := &AMMStatus{Enabled: p.Enabled, Interval: time.Duration(p.IntervalMs) * time.Millisecond, Policies: p.Policies,
		Rounds: p.Rounds, Nodes: int(p.Nodes), Objects: int(p.Objects), Copies: int(p.Copies), Dropped: p.Dropped,
		Replicated: p.Replicated, Moved: p.Moved, ReplicasNoFit: p.ReplicasNoFit, ReplicateFailed: p.ReplicateFailed,
		Tracked: int(p.Tracked), Refused: p.Refused}
	for _, d := range p.Drains {
		st.Drains = append(st.Drains, DrainStatus{NodeID: hex.EncodeToString(d.NodeId), Start: time.UnixMilli(d.StartUnixMs),
			ObjectsLeft: int(d.ObjectsLeft), BytesLeft: d.BytesLeft, Queued: int(d.Queued), Running: int(d.Running), State: d.State})
	}
	return st
}

// AMMOp is what ControlAMM asks of the AMM.
type AMMOp int

// The AMMOps.
const (
	AMMStatusOnly AMMOp = iota // only read the status
	AMMStart                   // run the policies
	AMMStop                    // stop running them (drains go on)
)

// ControlAMM starts or stops, within ctx, the policies of the head's Active Memory
// Manager over nc (AMMStatusOnly: neither) and returns its status.
func ControlAMM(ctx context.Context, nc *nats.Conn, op AMMOp) (*AMMStatus, error) {
	var pop atollpb.AMMControl_Op
	switch op {
	case AMMStatusOnly:
		pop = atollpb.AMMControl_STATUS
	case AMMStart:
		pop = atollpb.AMMControl_START
	case AMMStop:
		pop = atollpb.AMMControl_STOP
	default:
		return nil, errs.Invalidf("ControlAMM: unknown op %d", op)
	}
	p, err := (&cluster.AMMClient{Conn: nc}).Control(ctx, pop)
	if err != nil {
		return nil, err
	}
	return ammStatusFromProto(p), nil
}

// ResolveNode finds the live node whose hex id is or starts with prefix
// (at least 4 hex digits, as `atoll status` prints them): NotFound when
// none is, InvalidArgument when several are.
func ResolveNode(ctx context.Context, g *gcs.Client, prefix string) (ids.NodeID, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if len(prefix) < 4 {
		return ids.NodeID{}, errs.Invalidf("node id %q: give at least 4 hex digits", prefix)
	}
	if _, err := hex.DecodeString(prefix[:len(prefix)&^1]); err != nil {
		return ids.NodeID{}, errs.Invalidf("node id %q: not hex", prefix)
	}
	nodes, err := g.ListNodes(ctx)
	if err != nil {
		return ids.NodeID{}, err
	}
	var found []ids.NodeID
	for _, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err == nil && n.State == atollpb.NodeState_NODE_ALIVE && strings.HasPrefix(id.String(), prefix) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return ids.NodeID{}, errs.NotFoundf("no live node's id starts with %s", prefix)
	case 1:
		return found[0], nil
	}
	return ids.NodeID{}, errs.Invalidf("node id %s: %d live nodes' ids start with it; give more digits", prefix, len(found))
}

// drainPoll is how often DrainNode checks on a drain.
const drainPoll = 500 * time.Millisecond

// DrainNode drains the live node whose id starts with prefix, over nc:
// the node stops taking new work, the head's Active Memory Manager moves
// the objects only it holds to other nodes, its running tasks finish,
// then it leaves the cluster. DrainNode returns once the GCS lists the
// node dead, calling progress (if not nil) with the drain's status about
// every half second; it fails with the head's typed error (no such node,
// the head, a driver's node) or ctx's.
func DrainNode(ctx context.Context, nc *nats.Conn, prefix string, progress func(DrainStatus)) error {
	g := gcs.NewClient(nc, gcs.ClientOptions{})
	node, err := ResolveNode(ctx, g, prefix)
	if err != nil {
		return err
	}
	c := &cluster.AMMClient{Conn: nc}
	if err := c.Drain(ctx, node); err != nil {
		return err
	}
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		nodes, err := g.ListNodes(ctx)
		if err == nil {
			i := slices.IndexFunc(nodes, func(n *atollpb.NodeInfo) bool { return string(n.NodeId) == string(node.Bytes()) })
			if i < 0 || nodes[i].State != atollpb.NodeState_NODE_ALIVE {
				if progress != nil {
					progress(DrainStatus{NodeID: node.String(), State: "left"})
				}
				return nil
			}
		}
		if progress != nil {
			if p, err := c.Control(ctx, atollpb.AMMControl_STATUS); err == nil {
				for _, d := range ammStatusFromProto(p).Drains {
					if d.NodeID == node.String() {
						progress(d)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
