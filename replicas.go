package atoll

import (
	"context"
	"runtime"

	"github.com/atoll-runtime/atoll/amm"
)

// ReplicasAllNodes as SetReplicas's count asks for a copy on every node
// that runs tasks (nodes that join later included).
const ReplicasAllNodes = amm.AllNodes

// SetReplicas asks the head's Active Memory Manager to keep n copies of ref's object in the
// cluster's stores, its primary included: its Replicate policy has nodes
// pull the missing copies, least loaded first, and restores the count
// when a node holding one dies, as long as one copy lives. n is
// ReplicasAllNodes for a copy on every node, 0 to stop tracking. The
// count lasts as long as the object (or until the head restarts: it is
// not persisted). Objects small enough to be inlined in their owner live
// in no store and are not replicated. The count is applied while the
// AMM's policies run (ATOLL_AMM=1 on the head, or StartAMM). It fails with
// ErrUnavailable when no AMM answers (a head older than this one), and
// ErrInvalidArgument outside a cluster.
func SetReplicas[T any](ctx context.Context, ref ObjectRef[T], n int) error {
	if err := ref.check(); err != nil {
		return err
	}
	defer runtime.KeepAlive(ref.h)
	nd, err := clusterNode("SetReplicas")
	if err != nil {
		return err
	}
	return nd.Gateway().SetReplicas(ctx, ref.h.id, n)
}
