package atolltest

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/runtime"
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
	// ActorHandles is the number of actors this process knows: those it
	// holds handles to, and those it created that are still alive (they
	// die with its job).
	ActorHandles int
	// Lineage: finished tasks whose lineage this process keeps (to rebuild
	// their lost outputs) and its bytes; lineage evicted past the budget;
	// tasks run again to rebuild lost objects.
	Lineage, LineageBytes           int
	LineageEvicted, Reconstructions uint64
	// Borrowers: processes that reported holding objects this process
	// lent them (refs passed inside values that outlived their task);
	// BorrowedObjects: the references those reports keep.
	Borrowers, BorrowedObjects int
	// Spilling: bytes written to and read back from spill files ever,
	// bytes of live objects on disk now, spill files now, failed spill
	// writes, and creations that got their space from a spill.
	SpilledBytesTotal, RestoredBytesTotal uint64
	SpilledBytesCurrent, SpillFiles       uint64
	SpillErrors, FallbackCreates          uint64
}

// Memory reports the object store's usage and this process's objects
// (in a task: the process running it).
func Memory(ctx context.Context) (MemoryStats, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return MemoryStats{}, err
	}
	s, os, err := rt.Memory(ctx)
	if err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{
		StoreCapacity: s.CapacityBytes, StoreUsed: s.UsedBytes, StoreObjects: s.NumObjects, StorePinned: s.PinnedBytes,
		PendingCreates: s.PendingCreates, OwnedObjects: os.Objects, PendingTasks: os.Tasks, ActorHandles: os.Actors,
		Borrowers: os.Borrowers, BorrowedObjects: os.BorrowedObjects,
		Lineage: os.Lineage, LineageBytes: os.LineageBytes, LineageEvicted: os.LineageEvicted, Reconstructions: os.Reconstructions,
		SpilledBytesTotal: s.SpilledBytesTotal, RestoredBytesTotal: s.RestoredBytesTotal,
		SpilledBytesCurrent: s.SpilledBytesCurrent, SpillFiles: s.SpillFilesCurrent,
		SpillErrors: s.SpillErrorsTotal, FallbackCreates: s.FallbackCreatesTotal,
	}, nil
}

// NodeStatus describes this node's raylet: resources and its worker pool.
type NodeStatus struct {
	NodeID string
	// Total and Available resources ("CPU", "memory", custom).
	Total, Available map[string]float64
	// Queued tasks wait for resources or a worker; Running ones run.
	Queued, Running int
	// Workers in the pool, and how many are idle.
	Workers, IdleWorkers int
	// Actors hosted.
	Actors int
	// WorkersReaped counts idle workers stopped past the idle timeout.
	WorkersReaped uint64
}

// Status reports the driver's node's raylet. A worker process gets
// ErrInvalidArgument.
func Status(ctx context.Context) (NodeStatus, error) {
	d, err := runtime.DriverOf(ctx, "Status")
	if err != nil {
		return NodeStatus{}, err
	}
	st, err := d.Status(ctx)
	if err != nil {
		return NodeStatus{}, err
	}
	return NodeStatus{
		NodeID: st.NodeID.String(), Total: st.Total, Available: st.Available, Queued: st.Queued, Running: st.Running,
		Workers: st.Workers, IdleWorkers: st.IdleWorkers, Actors: st.Actors, WorkersReaped: st.Stats.WorkersReaped,
	}, nil
}
