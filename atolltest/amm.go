package atolltest

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// The head's Active Memory Manager from a driver: its status, its
// policies started and stopped, nodes drained. atoll.SetReplicas sets an
// object's replica count.

type (
	// AMMStatus is the head's Active Memory Manager: whether its policies
	// run, what it did, the drains under way.
	AMMStatus = clusterclient.AMMStatus
	// DrainStatus is one drain's progress.
	DrainStatus = clusterclient.DrainStatus
)

// GetAMMStatus returns the status of the head's Active Memory Manager.
func GetAMMStatus(ctx context.Context) (*AMMStatus, error) {
	return controlAMM(ctx, clusterclient.AMMStatusOnly)
}

// StartAMM starts the policies of the head's Active Memory Manager (as
// ATOLL_AMM=1 on the head does at its start) and returns its status.
func StartAMM(ctx context.Context) (*AMMStatus, error) {
	return controlAMM(ctx, clusterclient.AMMStart)
}

// StopAMM stops the policies of the head's Active Memory Manager: no copy
// is dropped or made any more, except by drains under way.
func StopAMM(ctx context.Context) (*AMMStatus, error) { return controlAMM(ctx, clusterclient.AMMStop) }

func controlAMM(ctx context.Context, op clusterclient.AMMOp) (*AMMStatus, error) {
	n, err := clusterNode(ctx, "the Active Memory Manager")
	if err != nil {
		return nil, err
	}
	return clusterclient.ControlAMM(ctx, n.Conn(), op)
}

// DrainNode drains the live node whose id is (or starts with, at least 4
// hex digits) nodeID: it stops taking new tasks, the head's Active Memory
// Manager copies the objects only it holds to other nodes, its running
// tasks finish, then it leaves the cluster (its process exits). No task
// fails and no object is lost; actors it hosts restart elsewhere as after
// a node failure. DrainNode returns when the node is gone; progress, if
// not nil, is called with the drain's status about every half second. The
// head and drivers' nodes cannot be drained (ErrInvalidArgument); an
// unknown node is ErrNotFound.
func DrainNode(ctx context.Context, nodeID string, progress func(DrainStatus)) error {
	n, err := clusterNode(ctx, "DrainNode")
	if err != nil {
		return err
	}
	return clusterclient.DrainNode(ctx, n.Conn(), nodeID, progress)
}

// clusterNode is the running driver's node, if it is part of a cluster.
func clusterNode(ctx context.Context, what string) (*node.Node, error) {
	d, err := runtime.DriverOf(ctx, what)
	if err != nil {
		return nil, err
	}
	return d.ClusterNode(what)
}
