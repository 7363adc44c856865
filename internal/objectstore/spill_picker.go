package objectstore

import (
	"cmp"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Defaults of the spill policy, Ray's: fuse objects into files of about
// 100 MiB (large sequential writes, few files) and at most 2000 objects
// (bounded index and bookkeeping per file).
const (
	DefaultSpillThreshold  = 0.8
	DefaultSpillBatchBytes = 100 << 20
	DefaultSpillMaxObjects = 2000
)

// SpillCandidate is one object in memory, as the spill picker sees it.
type SpillCandidate struct {
	ID ids.ObjectID
	// Size is the memory spilling the object frees (its block).
	Size uint64
	// Sealed objects are immutable; only they can be spilled.
	Sealed bool
	// Pinned objects are being read by a client (or restored for one).
	Pinned bool
	// Busy objects are being written to disk or read back already.
	Busy bool
	// OnDisk objects have a copy on disk already (they were restored):
	// evicting them drops the memory and writes nothing.
	OnDisk bool
	// LastAccess is when the object was created, sealed or last read.
	LastAccess time.Time
}

// SpillLimits bound the files the picker plans.
type SpillLimits struct {
	// BatchBytes is the most bytes fused into one file. An object at least
	// this large is written alone.
	BatchBytes uint64
	// MaxObjects is the most objects fused into one file.
	MaxObjects int
	// WritesBlocked forbids writes (the store backs off after a failed
	// spill): only objects already on disk are picked.
	WritesBlocked bool
}

// SpillPlan is what the picker decided.
type SpillPlan struct {
	// Evict lists objects already on disk whose memory can be dropped now.
	Evict []ids.ObjectID
	// Batches lists the files to write, each the ids fused into it, in
	// file order.
	Batches [][]ids.ObjectID
	// Bytes is the memory the plan frees once carried out.
	Bytes uint64
}

// PickSpill chooses objects to spill until their memory adds up to need
// bytes (or nothing more can be spilled). It is a pure function of its
// arguments.
//
// Only sealed, unpinned, idle objects are eligible. Copies that are on disk
// already go first, least recently used first, since dropping them costs no
// I/O (Ray evicts such secondary copies before spilling primary ones); then
// primary copies, least recently used first. Primary copies are fused into
// batches in that order: a batch closes when the next object would take it
// past limits.BatchBytes or limits.MaxObjects; an object of BatchBytes or
// more is a batch of its own. Ties in LastAccess go to the smaller id, so
// plans are deterministic.
func PickSpill(snapshot []SpillCandidate, need uint64, limits SpillLimits) SpillPlan {
	var plan SpillPlan
	if need == 0 {
		return plan
	}
	eligible := make([]SpillCandidate, 0, len(snapshot))
	for _, c := range snapshot {
		if c.Sealed && !c.Pinned && !c.Busy && (c.OnDisk || !limits.WritesBlocked) {
			eligible = append(eligible, c)
		}
	}
	slices.SortFunc(eligible, func(a, b SpillCandidate) int {
		if a.OnDisk != b.OnDisk {
			if a.OnDisk {
				return -1
			}
			return 1
		}
		if c := a.LastAccess.Compare(b.LastAccess); c != 0 {
			return c
		}
		return cmp.Compare(string(a.ID[:]), string(b.ID[:]))
	})
	maxObjects := max(limits.MaxObjects, 1)
	var batch []ids.ObjectID
	var batchBytes uint64
	closeBatch := func() {
		if len(batch) > 0 {
			plan.Batches = append(plan.Batches, batch)
			batch, batchBytes = nil, 0
		}
	}
	for _, c := range eligible {
		if plan.Bytes >= need {
			break
		}
		plan.Bytes += c.Size
		switch {
		case c.OnDisk:
			plan.Evict = append(plan.Evict, c.ID)
		case c.Size >= limits.BatchBytes:
			plan.Batches = append(plan.Batches, []ids.ObjectID{c.ID})
		default:
			if batchBytes+c.Size > limits.BatchBytes || len(batch) >= maxObjects {
				closeBatch()
			}
			batch = append(batch, c.ID)
			batchBytes += c.Size
		}
	}
	closeBatch()
	return plan
}
