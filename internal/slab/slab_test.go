package slab

import (
	"runtime"
	"testing"
	"unsafe"
	"weak"
)

type record struct {
	a, b uint64
	// p points at 64 bytes: not a tiny allocation, which shares its
	// block (and so its lifetime) with others.
	p *[8]int
}

// TestNewHandsOutZeroDistinctRecords: every record is zero and its own,
// a run holds PerRun of them, and a record written does not show in the
// next.
func TestNewHandsOutZeroDistinctRecords(t *testing.T) {
	var s Of[record]
	n := PerRun[record]()
	if want := min(MaxPerRun, RunBytes/int(unsafe.Sizeof(record{}))); n != want {
		t.Fatalf("PerRun = %d, want %d", n, want)
	}
	seen := map[*record]bool{}
	for i := range 3*n + 1 {
		r := s.New()
		if *r != (record{}) {
			t.Fatalf("record %d is not zero: %+v", i, *r)
		}
		if seen[r] {
			t.Fatalf("record %d handed out twice", i)
		}
		seen[r] = true
		r.a, r.b = uint64(i), ^uint64(i)
	}
}

// TestPerRun: small records come MaxPerRun to a run; larger ones as
// many as fit in RunBytes; a record larger than a run one per run.
func TestPerRun(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"an empty record", PerRun[struct{}](), MaxPerRun},
		{"a 64-byte record", PerRun[[64]byte](), MaxPerRun},
		{"a 528-byte record", PerRun[[528]byte](), RunBytes / 528},
		{"a record twice a run's size", PerRun[[2 * RunBytes]byte](), 1},
	} {
		if c.got != c.want {
			t.Errorf("PerRun of %s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestNewAllocatesTwicePerRun: handing out a run's records costs two
// allocations, the run and its weak pointer's handle.
func TestNewAllocatesTwicePerRun(t *testing.T) {
	var s Of[record]
	n := PerRun[record]()
	keep := make([]*record, n) // the run stays in use
	allocs := testing.AllocsPerRun(10, func() {
		for i := range n {
			keep[i] = s.New()
		}
	})
	if allocs > 2 {
		t.Fatalf("%d records took %.1f allocations, want at most 2", n, allocs)
	}
}

// TestQuietSlabKeepsNothing: once every record handed out is
// unreachable, their run goes, and what they pointed to, although the
// slab is still in use and its run had records left to hand out; the
// slab then hands out records from a fresh run.
func TestQuietSlabKeepsNothing(t *testing.T) {
	var s Of[record]
	referent := weak.Make(pointAtNew(&s))
	for range 5 {
		runtime.GC()
		if referent.Value() == nil {
			break
		}
	}
	if referent.Value() != nil {
		t.Fatal("a dead record's referent was kept by the slab's current run")
	}
	r := s.New()
	if *r != (record{}) {
		t.Fatalf("a record after the run went is not zero: %+v", *r)
	}
}

// pointAtNew hands out one record of s, points it at new memory, and
// returns that; the record is then unreachable.
func pointAtNew(s *Of[record]) *[8]int {
	r := s.New()
	r.p = new([8]int)
	return r.p
}

// TestRunFreedWithItsLastRecord: a run is kept while any one record of
// it is reachable, and collected once none is.
func TestRunFreedWithItsLastRecord(t *testing.T) {
	rs := oneRun()
	first := weak.Make(rs[0])
	last := rs[len(rs)-1]
	clear(rs)
	runtime.GC()
	if first.Value() == nil {
		t.Fatal("the run was collected while one of its records was reachable")
	}
	runtime.KeepAlive(last)
	for range 5 {
		runtime.GC()
		if first.Value() == nil {
			return
		}
	}
	t.Fatal("the run was kept after none of its records was reachable")
}

// oneRun hands out one run's records from a slab that is gone after.
func oneRun() []*record {
	var s Of[record]
	rs := make([]*record, PerRun[record]())
	for i := range rs {
		rs[i] = s.New()
	}
	return rs
}
