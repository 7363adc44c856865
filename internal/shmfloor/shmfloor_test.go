package shmfloor

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if IsChild() { // a summing worker started again by Procs
		RunChild()
	}
	os.Exit(m.Run())
}

// TestProcs: worker processes sum the memfd and their sums are checked
// (Procs fails on a wrong one); any number of workers, with or without
// prefaulting, and with no steady sums beyond the first pass.
func TestProcs(t *testing.T) {
	m, err := NewMemfd(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Len() != 1<<16 || m.Want <= 0 {
		t.Fatalf("memfd of %d values summing to %g", m.Len(), m.Want)
	}
	for _, c := range []struct {
		workers, sums int
		prefault      bool
	}{{2, 3, false}, {3, 0, true}, {1, 1, false}} {
		tm, err := m.Procs(c.workers, c.sums, c.prefault)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if tm.First <= 0 || tm.Sums <= 0 || tm.Total() != tm.First+tm.Sums {
			t.Errorf("%+v: %+v", c, tm)
		}
	}
	if _, err := m.Procs(0, 1, false); err == nil {
		t.Error("Procs with no workers succeeded")
	}
}

// TestMedian takes the median of each figure apart.
func TestMedian(t *testing.T) {
	got := Median([]Timing{{First: 3, Sums: 10}, {First: 1, Sums: 30}, {First: 2, Sums: 20}})
	if got != (Timing{First: 2, Sums: 20}) {
		t.Fatalf("Median: %+v", got)
	}
}
