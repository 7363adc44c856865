package objectstore

import (
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Reads after free: a Get of an id its owner freed counts, whether the
// object was gone at once or still pinned (deleted-pending); a Get of an
// id never freed, or created again after its free, does not; the count
// reaches StoreStats.
func TestStoreCountsReadsAfterFree(t *testing.T) {
	s := NewStore(1 << 20)
	now := time.Unix(0, 0)
	c1, c2 := ids.NewWorkerID(), ids.NewWorkerID()
	put := func(id ids.ObjectID) {
		t.Helper()
		if _, queued, err := s.Create(CreateRequest{ID: id, Size: 100, Client: c1}, now); err != nil || queued {
			t.Fatalf("create: %v queued=%v", err, queued)
		}
		if err := s.Seal(id, c1, now); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id ids.ObjectID) GetResult { return s.Get([]ids.ObjectID{id}, c2, now) }
	a, b, never := ids.PutObjectID(ids.NewTaskID(), 1), ids.PutObjectID(ids.NewTaskID(), 1), ids.PutObjectID(ids.NewTaskID(), 1)
	put(a)
	put(b)
	if created, sealed := s.Holds(a); !created || !sealed {
		t.Fatalf("Holds of a sealed object: %v %v", created, sealed)
	}
	if res := get(a); len(res.Missing) != 0 || s.ReadsAfterFree() != 0 {
		t.Fatalf("a live read: %+v, %d reads after free", res, s.ReadsAfterFree())
	}
	get(never)
	if s.ReadsAfterFree() != 0 {
		t.Fatal("a Get of an id never created counted as a read after free")
	}
	// b freed: Holds says so and counts nothing; a read is the violation,
	// and the latest one read is named.
	s.Delete([]ids.ObjectID{b}, now)
	if created, sealed := s.Holds(b); created || sealed || s.ReadsAfterFree() != 0 {
		t.Fatalf("Holds of a freed id: %v %v, %d reads after free", created, sealed, s.ReadsAfterFree())
	}
	if res := get(b); len(res.Missing) != 1 || s.ReadsAfterFree() != 1 || s.LastReadAfterFree() != b {
		t.Fatalf("read after free: %+v, %d counted, latest %s", res, s.ReadsAfterFree(), s.LastReadAfterFree().Short())
	}
	// a freed while c2 pins it: hidden from new Gets, and counted.
	s.Delete([]ids.ObjectID{a}, now)
	if res := get(a); len(res.Missing) != 1 || s.ReadsAfterFree() != 2 {
		t.Fatalf("read after a pinned free: %+v, %d counted", res, s.ReadsAfterFree())
	}
	if err := s.Release([]ids.ObjectID{a}, c2, now); err != nil || s.Len() != 0 {
		t.Fatalf("release: %v, %d objects", err, s.Len())
	}
	// Created again: a new object under the id, read freely.
	put(b)
	if res := get(b); len(res.Missing) != 0 || s.ReadsAfterFree() != 2 {
		t.Fatalf("read of a re-created id: %+v, %d counted", res, s.ReadsAfterFree())
	}
	if st := s.Stats(); st.ReadsAfterFreeTotal != 2 {
		t.Fatalf("stats: %d reads after free", st.ReadsAfterFreeTotal)
	}
	// Freed, then revived by its owner (a lineage reconstruction rebuilds
	// it elsewhere): a Get while it is rebuilt is no read after free.
	s.Delete([]ids.ObjectID{never}, now)
	s.Revive([]ids.ObjectID{never})
	if get(never); s.ReadsAfterFree() != 2 {
		t.Fatalf("a Get of a revived id counted: %d", s.ReadsAfterFree())
	}
	// A stray copy deleted (a late attempt stored it here after its owner
	// moved on): gone, but not freed, so a Get of it (waiting for a pull
	// of the owner's copy) is no read after free.
	stray := ids.PutObjectID(ids.NewTaskID(), 1)
	put(stray)
	s.DeleteStrays([]ids.ObjectID{stray}, now)
	if created, sealed := s.Holds(stray); created || sealed {
		t.Fatalf("Holds of a deleted stray: %v %v", created, sealed)
	}
	if res := get(stray); len(res.Missing) != 1 || s.ReadsAfterFree() != 2 {
		t.Fatalf("a Get of a deleted stray: %+v, %d reads after free", res, s.ReadsAfterFree())
	}
}

// The freed ids remembered are bounded: the oldest are forgotten, an id
// freed again is remembered from its latest free.
func TestFreedIDsBounded(t *testing.T) {
	var f freedIDs
	first := ids.PutObjectID(ids.NewTaskID(), 1)
	again := ids.PutObjectID(ids.NewTaskID(), 1)
	f.add(first)
	f.add(again)
	for i := range MaxFreedRemembered - 3 {
		f.add(ids.PutObjectID(ids.NewTaskID(), uint32(i)))
	}
	f.add(again) // its latest entry now
	f.add(ids.PutObjectID(ids.NewTaskID(), 1))
	f.add(ids.PutObjectID(ids.NewTaskID(), 1)) // overwrites first's and again's first entries
	if len(f.ring) != MaxFreedRemembered || len(f.latest) != MaxFreedRemembered {
		t.Fatalf("%d in the ring, %d remembered", len(f.ring), len(f.latest))
	}
	if f.has(first) || !f.has(again) {
		t.Fatalf("first remembered %v (want false), again %v (want true)", f.has(first), f.has(again))
	}
}
