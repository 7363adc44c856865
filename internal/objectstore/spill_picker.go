package objectstore

import (
	"cmp"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
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
	// DiskLimited bounds the files the plan writes to DiskBytes in all
	// (spill.FileSize of each batch): objects that do not fit in what is
	// left are passed over, smaller ones after them may still fit.
	DiskLimited bool
	DiskBytes   uint64
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
	// DiskShort is set when objects that could have been spilled were
	// passed over for lack of disk space (SpillLimits.DiskBytes).
	DiskShort bool
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
// more is a batch of its own. With limits.DiskLimited the files written
// add up to at most limits.DiskBytes: an object whose file space does not
// fit is passed over (the batches are cut to the free space). Ties in
// LastAccess go to the smaller id, so plans are deterministic.
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
	// Disk space: of the batches closed, and of the open one's objects.
	var diskClosed, diskObjects uint64
	closeBatch := func() {
		if len(batch) > 0 {
			plan.Batches = append(plan.Batches, batch)
			diskClosed += diskObjects + fileTail(len(batch))
			batch, batchBytes, diskObjects = nil, 0, 0
		}
	}
	for _, c := range eligible {
		if plan.Bytes >= need {
			break
		}
		switch {
		case c.OnDisk:
			plan.Evict = append(plan.Evict, c.ID)
		case c.Size >= limits.BatchBytes:
			if cost := spill.PageAlign(c.Size) + fileTail(1); limits.DiskLimited && diskClosed+diskObjects+fileTail(len(batch))+cost > limits.DiskBytes {
				plan.DiskShort = true
				continue
			}
			plan.Batches = append(plan.Batches, []ids.ObjectID{c.ID})
			diskClosed += spill.PageAlign(c.Size) + fileTail(1)
		default:
			closes := batchBytes+c.Size > limits.BatchBytes || len(batch) >= maxObjects
			if limits.DiskLimited {
				// The disk the plan takes with c added, to its batch or
				// to a new one.
				after := diskClosed + diskObjects + fileTail(len(batch)) + spill.PageAlign(c.Size) + fileTail(1)
				if !closes {
					after = diskClosed + diskObjects + spill.PageAlign(c.Size) + fileTail(len(batch)+1)
				}
				if after > limits.DiskBytes {
					plan.DiskShort = true
					continue
				}
			}
			if closes {
				closeBatch()
			}
			batch = append(batch, c.ID)
			batchBytes += c.Size
			diskObjects += spill.PageAlign(c.Size)
		}
		plan.Bytes += c.Size
	}
	closeBatch()
	return plan
}

// fileTail is the disk space of a spill file's index and footer for n
// objects, in whole pages (spill.FileSize less its objects).
func fileTail(n int) uint64 {
	if n == 0 {
		return 0
	}
	return spill.PageAlign(spill.TailSize(n))
}
