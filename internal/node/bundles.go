package node

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Placement groups on a node: where the node runs the GCS (a head, an
// embedded node) it runs the placement actor beside it (gcs's
// NewPlacementProps); every node takes the two-phase commit's steps for
// its bundles on gcs.BundlesSubject, which its raylet applies, and
// follows the groups' changes (gcs.PlacementEventsSubject): a removed
// group's tasks waiting in its raylet fail.

// startPlacement spawns the placement actor ("gcs-placement").
func (n *Node) startPlacement() error {
	props, err := gcs.NewPlacementProps(gcs.PlacementConfig{Conn: n.nc, Logger: quiet(n.log)})
	if err != nil {
		return err
	}
	props = props.Configure(actors.RestartForever(n.log, "gcs-placement"))
	if n.placementPID, err = n.system.Root.SpawnNamed(n.withFaults(props), "gcs-placement"); err != nil {
		return fmt.Errorf("atoll: start the placement manager: %w", err)
	}
	return nil
}

// serveBundles hands the placement manager's steps to the raylet, and
// the groups' removals too.
func (n *Node) serveBundles() error {
	root, rayletPID := n.system.Root, n.rayletPID
	sub, err := n.nc.Subscribe(gcs.BundlesSubject(gcs.DefaultPrefix, n.id), func(m *nats.Msg) {
		op := &atollpb.BundleOp{}
		if err := proto.Unmarshal(m.Data, op); err != nil || string(op.NodeId) != string(n.id.Bytes()) {
			n.log.Warn("placement: a bad bundle request dropped", "err", err)
			return
		}
		root.Send(rayletPID, &raylet.BundleRequest{Op: op, Reply: func(r *atollpb.BundleOpReply) {
			if b, err := proto.Marshal(r); err == nil {
				_ = m.Respond(b)
			}
		}})
	})
	if err != nil {
		return err
	}
	n.bundleSubs = append(n.bundleSubs, sub)
	sub, err = n.nc.Subscribe(gcs.PlacementEventsSubject(gcs.DefaultPrefix), func(m *nats.Msg) {
		info := &atollpb.PlacementGroupInfo{}
		if proto.Unmarshal(m.Data, info) != nil || info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
			return
		}
		if id, err := ids.FromBytes(info.PlacementGroupId); err == nil {
			root.Send(rayletPID, &raylet.GroupRemoved{ID: id, Reason: info.Reason})
		}
	})
	if err != nil {
		return err
	}
	n.bundleSubs = append(n.bundleSubs, sub)
	return nil
}
