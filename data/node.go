package data

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// nodeStatus is the driver's node's raylet state (resources, queue): a
// run sizes its CPU share and its pools by it. A worker process gets
// ErrInvalidArgument.
func nodeStatus(ctx context.Context) (*raylet.State, error) {
	d, err := runtime.DriverOf(ctx, "a dataset's CPU share")
	if err != nil {
		return nil, err
	}
	return d.Status(ctx)
}

// storeCapacity is the object store's limit in bytes on the node of the
// runtime running ctx: a run's default memory budget is a fraction of it.
func storeCapacity(ctx context.Context) (uint64, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return 0, err
	}
	s, _, err := rt.Memory(ctx)
	if err != nil {
		return 0, err
	}
	return s.CapacityBytes, nil
}
