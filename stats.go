package atoll

import (
	"context"
)

// MemoryStats describes this node's object store and this process's
// object table.
type MemoryStats struct {
	// StoreCapacity is the object store's hard limit in bytes.
	StoreCapacity uint64
	// StoreUsed is the bytes allocated to objects in the store.
	StoreUsed uint64
	// StoreObjects is the number of objects in the store.
	StoreObjects uint64
	// StorePinned is the bytes of objects pinned by readers.
	StorePinned uint64
	// PendingCreates is the number of creations waiting for space.
	PendingCreates uint64
	// OwnedObjects is the number of live objects this process owns
	// (inline or stored).
	OwnedObjects int
	// PendingTasks is the number of tasks this process submitted that
	// have not finished.
	PendingTasks int
}

// Memory reports the object store's usage and this process's objects.
func Memory(ctx context.Context) (MemoryStats, error) {
	rt, err := running()
	if err != nil {
		return MemoryStats{}, err
	}
	s, err := rt.store.Stats(ctx)
	if err != nil {
		return MemoryStats{}, err
	}
	live, _, _ := rt.objects.stats()
	return MemoryStats{
		StoreCapacity: s.CapacityBytes, StoreUsed: s.UsedBytes, StoreObjects: s.NumObjects, StorePinned: s.PinnedBytes,
		PendingCreates: s.PendingCreates, OwnedObjects: live, PendingTasks: rt.tasks.size(),
	}, nil
}
