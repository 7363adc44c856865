package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{live: 16 * mib, floor: 128 * mib, base: 100, want: 700},    // goal 16·8 = 128 MiB
		{live: 16*mib + 1, floor: 128 * mib, base: 100, want: 699},  // the goal rounds down
		{live: 0, floor: 128 * mib, base: 100, want: 3100},          // before any cycle: 4 MiB live
		{live: 64 * mib, floor: 128 * mib, base: 100, want: 100},    // 64·2 reaches the floor
		{live: 32 * mib, floor: 64*mib + 1, base: 100, want: 100},   // one byte short: the floor's own goal
		{live: 512 * mib, floor: 128 * mib, base: 100, want: 100},   // a large heap: plain GOGC
		{live: 100 * mib, floor: 128 * mib, base: 20, want: 28},     // a lower base, raised to the floor
		{live: 200 * mib, floor: 128 * mib, base: 20, want: 20},     // and kept where it reaches it
		{live: 8 * mib, floor: 1024 * mib, base: 1000, want: 12700}, // a higher base, raised too
		{live: 8 * mib, floor: 88 * mib, base: 1000, want: 1000},    // or kept
		{live: 1, floor: 128 * mib, base: 100, want: maxPercent},    // bounded
		{live: 16 * mib, floor: 128 * mib, base: -1, want: -1},      // GOGC=off stays off
		{live: 16 * mib, floor: 0, base: 100, want: 100},            // no floor
		{live: 100, floor: 101, base: 0, want: 1},                   // GOGC=0 raised by a byte
	} {
		if got := Percent(c.live, c.floor, c.base); got != c.want {
			t.Errorf("Percent(live %d, floor %d, base %d) = %d, want %d", c.live, c.floor, c.base, got, c.want)
		}
	}
}

// TestFloorCutsCollections: 512 MiB of short-lived 1 MiB buffers cost
// dozens of collections with a small live heap and plain GOGC, and a
// handful under a 128 MiB floor; the goal reaches the floor after a
// collection, and Stop puts GOGC back.
func TestFloorCutsCollections(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	plain := cycles(churn)
	f := Start(128 << 20)
	floored := cycles(churn)
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for read("/gc/heap/goal:bytes") < 120<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("heap goal %d after a collection under a 128 MiB floor", read("/gc/heap/goal:bytes"))
		}
		runtime.Gosched()
	}
	f.Stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GOGC %d after Stop, want 100", p)
	}
	t.Logf("collections: %d with plain GOGC, %d under the floor", plain, floored)
	if floored*4 > plain {
		t.Fatalf("collections: %d with plain GOGC, %d under the floor: want a quarter at most", plain, floored)
	}
}

// TestIdleRelease: garbage held under the floor goes back to the system
// once the process stops allocating, and again after each spell of
// allocation.
func TestIdleRelease(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	f := Start(256 << 20)
	defer f.Stop()
	for spell := 1; spell <= 2; spell++ {
		churn()
		deadline := time.Now().Add(10 * time.Second)
		for f.Releases() < spell {
			if time.Now().After(deadline) {
				t.Fatalf("spell %d: %d releases after 10 s idle", spell, f.Releases())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if free := read("/memory/classes/heap/free:bytes"); free > 32<<20 {
			t.Fatalf("spell %d: %d bytes free and not returned after the release", spell, free)
		}
	}
}

// TestStartLeavesGOGCOff: with the collector off, Start changes nothing.
func TestStartLeavesGOGCOff(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	f := Start(128 << 20)
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GOGC %d after Start with the collector off", p)
	}
	f.Stop()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GOGC %d after Stop with the collector off", p)
	}
}

var sink []byte

func churn() {
	for range 512 {
		sink = make([]byte, 1<<20)
	}
	sink = nil
}

func cycles(work func()) uint64 {
	n := read("/gc/cycles/total:gc-cycles")
	work()
	return read("/gc/cycles/total:gc-cycles") - n
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
