package compact

import (
	"runtime"
	"testing"
)

// TestMapCopiesOnceMostlyEmpty: a map that grew past MinEntries and lost
// seven eighths of its entries is copied (its memory goes back); one that
// stayed small, or kept more, is the same map; the copy holds the same
// entries.
func TestMapCopiesOnceMostlyEmpty(t *testing.T) {
	var mark Mark
	m := map[int]int{}
	for i := range 8 * MinEntries {
		m[i] = i
		m = Map(m, &mark)
	}
	if mark.high != 8*MinEntries {
		t.Fatalf("mark %d after %d inserts", mark.high, 8*MinEntries)
	}
	for i := range 7 * MinEntries {
		delete(m, i)
		before := m
		m = Map(m, &mark)
		if !same(before, m) {
			t.Fatalf("copied with %d of %d entries left", len(m), 8*MinEntries)
		}
	}
	delete(m, 7*MinEntries)
	before := m
	m = Map(m, &mark)
	if same(before, m) {
		t.Fatalf("not copied with %d of %d entries left", len(m), 8*MinEntries)
	}
	if len(m) != MinEntries-1 || mark.high != MinEntries-1 {
		t.Fatalf("copy holds %d entries, mark %d; want %d", len(m), mark.high, MinEntries-1)
	}
	for i := 7*MinEntries + 1; i < 8*MinEntries; i++ {
		if m[i] != i {
			t.Fatalf("entry %d: %d", i, m[i])
		}
	}

	var small Mark
	s := map[int]int{}
	for i := range MinEntries - 1 {
		s[i] = i
		s = Map(s, &small)
	}
	clear(s)
	if before := s; !same(before, Map(s, &small)) {
		t.Fatal("a map that never reached MinEntries was copied")
	}
}

// same reports whether a and b are the same map (not equal contents: the
// same buckets): a write through one is seen through the other.
func same(a, b map[int]int) bool {
	const probe = -1
	_, had := a[probe]
	a[probe] = 1
	_, seen := b[probe]
	if !had {
		delete(a, probe)
	}
	return seen
}

// TestMapGivesMemoryBack: the heap a million-entry map held is collected
// once it is emptied and compacted.
func TestMapGivesMemoryBack(t *testing.T) {
	var mark Mark
	m := map[[16]byte]*int{}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	for i := range 1 << 20 {
		var k [16]byte
		k[0], k[1], k[2] = byte(i), byte(i>>8), byte(i>>16)
		m[k] = nil
	}
	m = Map(m, &mark)
	full := heap()
	for k := range m {
		delete(m, k)
	}
	kept := heap()
	m = Map(m, &mark)
	back := heap()
	runtime.KeepAlive(m)
	t.Logf("heap: %d before, %d full, %d emptied, %d compacted", base, full, kept, back)
	if full-base < 16<<20 || kept-base < 16<<20 {
		t.Fatalf("a million-entry map took %d bytes of heap, %d once emptied: the test measures nothing", full-base, kept-base)
	}
	if back > base+1<<20 {
		t.Fatalf("heap %d after compaction, %d before the map", back, base)
	}
}
