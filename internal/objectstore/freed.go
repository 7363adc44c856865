package objectstore

import "github.com/atoll-runtime/atoll/internal/ids"

// MaxFreedRemembered bounds the freed ids a Store remembers to catch
// reads after free: the latest ones (a ring), whatever the ids' sender
// sends.
const MaxFreedRemembered = 1 << 14

// freedIDs remembers the latest ids their owner freed (Delete): a Get of
// one of them is a read after free. A creation of the id again forgets
// it (a new object under the id; its reads are reads of the new one).
type freedIDs struct {
	ring  []ids.ObjectID
	added uint64 // ids ever added; ring[(k-1) % Max] is the k-th
	// latest maps each remembered id to the number of its latest entry.
	latest map[ids.ObjectID]uint64
	// reads counts the Gets of freed ids, ever; lastRead is the latest.
	reads    uint64
	lastRead ids.ObjectID
}

func (f *freedIDs) add(id ids.ObjectID) {
	if f.latest == nil {
		f.latest = make(map[ids.ObjectID]uint64)
	}
	f.added++
	slot := int((f.added - 1) % MaxFreedRemembered)
	if len(f.ring) < MaxFreedRemembered {
		f.ring = append(f.ring, id)
	} else {
		old := f.ring[slot]
		if f.latest[old] == f.added-MaxFreedRemembered { // its latest entry goes
			delete(f.latest, old)
		}
		f.ring[slot] = id
	}
	f.latest[id] = f.added
}

func (f *freedIDs) has(id ids.ObjectID) bool {
	_, ok := f.latest[id]
	return ok
}

// recreated forgets id.
func (f *freedIDs) recreated(id ids.ObjectID) { delete(f.latest, id) }
