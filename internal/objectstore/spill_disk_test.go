package objectstore

import (
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestSpillToASmallDisk: a 128 MiB store spilling to a 64 MiB file
// system. Puts succeed until the disk is really full (spilling is not cut
// short at half of it), the put that finds no room says the disk ran out,
// every object held stays readable (each restore makes room by spilling
// another), and after objects are freed, as many new puts fit.
func TestSpillToASmallDisk(t *testing.T) {
	const (
		capacity = 128 << 20
		disk     = 64 << 20
		size     = 2 << 20
	)
	dir := testutil.SmallDisk(t, disk)
	ts := startStore(t, capacity, Config{SpillDirs: []string{dir}, CreateTimeout: time.Second})
	c := ts.client()
	rng := rand.New(rand.NewPCG(21, 22))
	var held []ids.ObjectID
	sums := map[ids.ObjectID]uint32{}
	for {
		data := randomBytes(rng, size)
		id := newObjectID()
		err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, data)
		if err != nil {
			var full *errs.ObjectStoreFullError
			if !errors.As(err, &full) || full.Resource != errs.StoreDisk {
				t.Fatalf("put %d: %v, want ObjectStoreFull (disk)", len(held), err)
			}
			break
		}
		held = append(held, id)
		sums[id] = crc32.ChecksumIEEE(data)
		if len(held) > (capacity+disk)/size {
			t.Fatalf("%d puts of %d bytes fit in %d bytes of memory and %d of disk", len(held), size, capacity, disk)
		}
	}
	st := ts.stats()
	t.Logf("%d objects held; %d MiB spilled in %d files (%d MiB of files)", len(held), st.SpilledBytesCurrent>>20, st.SpillFilesCurrent, st.SpillFileBytesCurrent>>20)
	if st.SpilledBytesCurrent < 56<<20 {
		t.Fatalf("puts failed with %d MiB spilled to a %d MiB disk: %v", st.SpilledBytesCurrent>>20, disk>>20, st)
	}

	// Every object held is readable, one after the other, the spilled
	// ones at a full disk included.
	for i, id := range held {
		objs, err := c.GetWithPriority(bg, []ids.ObjectID{id}, 5*time.Second, PriorityGet)
		if err != nil {
			t.Fatalf("get of object %d of %d: %v (%v)", i, len(held), err, ts.stats())
		}
		if crc32.ChecksumIEEE(objs[0].Data) != sums[id] {
			t.Fatalf("object %d: bytes differ after spilling", i)
		}
		c.Release(id)
	}
	st = ts.stats()
	if st.RestoredObjectsTotal == 0 || st.RestoreErrorsTotal != 0 || st.SpillErrorsTotal != 0 {
		t.Fatalf("after reading everything back: %v", st)
	}

	// Freed objects make room for as many new ones: the oldest, which the
	// reads above left on disk (their space comes back from the middle of
	// spill files other objects live on in).
	const freed = 8
	gone := held[:freed]
	onDisk := 0
	ts.inspect(func(s *Store) {
		for _, id := range gone {
			if o := s.objects[id]; o != nil && !o.resident {
				onDisk++
			}
		}
	})
	if onDisk < freed/2 {
		t.Fatalf("only %d of the %d objects to free are on disk only", onDisk, freed)
	}
	c.Delete(gone...)
	for i := range freed {
		if err := c.Put(bg, newObjectID(), atollpb.Codec_CODEC_BYTES, randomBytes(rng, size)); err != nil {
			t.Fatalf("new put %d of %d after freeing %d objects: %v (%v)", i+1, freed, freed, err, ts.stats())
		}
	}
}
