package gcfloor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestFloorCutsCollections: 512 MiB of short-lived 1 MiB buffers cost
// dozens of collections with a small live heap and plain GOGC, and a
// handful with a floor of 128 MiB; the goal is at least three times the
// floor (1.5 times its ballast of twice the floor), and after Stop it
// falls back.
func TestFloorCutsCollections(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	plain := cycles(churn)
	f := Start(128 << 20)
	floored := cycles(churn)
	runtime.GC()
	if goal := read("/gc/heap/goal:bytes"); goal < 384<<20 {
		t.Fatalf("heap goal %d with a floor of 128 MiB, want 384 MiB at least", goal)
	}
	f.Stop()
	runtime.GC()
	if goal := read("/gc/heap/goal:bytes"); goal >= 256<<20 {
		t.Fatalf("heap goal %d after Stop", goal)
	}
	t.Logf("collections: %d with plain GOGC, %d with the floor", plain, floored)
	if floored*4 > plain {
		t.Fatalf("collections: %d with plain GOGC, %d with the floor: want a quarter at most", plain, floored)
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
		testutil.Eventually(t, fmt.Sprintf("release %d after idling", spell), func() bool { return f.Releases() >= spell })
		if free := read("/memory/classes/heap/free:bytes"); free > 32<<20 {
			t.Fatalf("spell %d: %d bytes free and not returned after the release", spell, free)
		}
	}
}

// TestStartLeavesGOGCOff: with the collector off, Start holds no
// ballast and watches nothing.
func TestStartLeavesGOGCOff(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	f := Start(128 << 20)
	if f.ballast != nil {
		t.Fatalf("%d bytes of ballast with the collector off", len(f.ballast))
	}
	select {
	case <-f.done:
	default:
		t.Fatal("the idle watch runs with the collector off")
	}
	f.Stop()
}

// TestStartSetsGOGC: a Floor runs the collector at Percent and gives
// the setting before it back at Stop; a floor of one byte changes
// nothing.
func TestStartSetsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	f := Start(8 << 20)
	if got := debug.SetGCPercent(Percent); got != Percent {
		t.Fatalf("GOGC %d under a floor, want %d", got, Percent)
	}
	if len(f.ballast) != 16<<20 {
		t.Fatalf("%d bytes of ballast for a floor of 8 MiB, want twice the floor", len(f.ballast))
	}
	f.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC %d after Stop, want 100 back", got)
	}
	one := Start(1)
	if got := debug.SetGCPercent(100); got != 100 || one.ballast != nil {
		t.Fatalf("a floor of one byte: GOGC %d, %d bytes of ballast; want Go's default", got, len(one.ballast))
	}
	one.Stop()
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
