// Package gcfloor keeps a process with a small live heap from collecting
// garbage every few megabytes.
//
// Go's collector starts a cycle when the heap reaches its goal, the live
// heap times 1+GOGC/100 (at least 4 MiB). A worker process holds little
// between tasks, so its goal stays a few tens of MiB, while one task of a
// dataset decodes and computes over tens of MiB of fresh buffers: it ran
// a collection or two per task, and the returned spans were zeroed again
// for the next. On two cores that made a Parquet pipeline's tasks 20–25%
// slower than the same kernels in a goroutine of a larger process.
//
// A Floor raises GOGC while the live heap is small, so that the goal is
// at least the floor: after each collection (a finalizer re-armed every
// cycle), it reads the live heap and sets GOGC to put the next goal at
// the floor, or back to the base GOGC once the live heap times
// 1+base/100 reaches the floor by itself. A process with a large live
// heap so behaves as with plain GOGC; one with a small heap lets up to
// the floor of garbage build before collecting. The cost is memory: the
// process's heap may reach the floor between collections. So that an
// idle process does not keep it, a Floor also watches the bytes
// allocated: after a second with less than a MiB allocated, it
// collects and returns the free memory to the system once
// (debug.FreeOSMemory), and again only after allocation resumes.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// DefaultFloor is a worker process's floor unless configured: a few
// row groups of decoded columns.
const DefaultFloor = 128 << 20

// maxPercent bounds the GOGC a Floor sets (a live heap of a few bytes
// would otherwise ask for an absurd one).
const maxPercent = 100_000

// Idle release: a process that allocated less than quietBytes over a
// quietPeriod is idle; it gives its free memory back once.
const (
	quietPeriod = time.Second
	quietBytes  = 1 << 20
)

// minHeap is the live heap assumed before the first collection has
// measured one: Go's own minimum goal at GOGC=100.
const minHeap = 4 << 20

// Floor keeps the heap goal at or above a floor until Stop.
type Floor struct {
	floor uint64

	mu      sync.Mutex
	base    int // GOGC before Start, restored by Stop
	stopped bool
	samples []metrics.Sample
	done     chan struct{} // closed by Stop: ends the idle watch
	released int           // idle releases (Releases)
}

// Start sets GOGC so that the heap goal is at least floor bytes, now and
// after every collection, until Stop. The base is the GOGC in force
// (100, or the GOGC environment variable's); a negative base (GOGC=off)
// is left alone.
func Start(floor uint64) *Floor {
	f := &Floor{floor: floor, samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, done: make(chan struct{})}
	f.base = debug.SetGCPercent(100)
	debug.SetGCPercent(f.base)
	if f.base < 0 {
		f.stopped = true
		close(f.done)
		return f
	}
	f.adjust()
	f.arm()
	go f.watchIdle()
	return f
}

// watchIdle gives the free memory back once per idle spell: when less
// than quietBytes were allocated over the last quietPeriod, after
// allocation since the last release.
func (f *Floor) watchIdle() {
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	read := func() uint64 {
		metrics.Read(allocs)
		return allocs[0].Value.Uint64()
	}
	tick := time.NewTicker(quietPeriod)
	defer tick.Stop()
	last, releasedAt := read(), uint64(0)
	for {
		select {
		case <-f.done:
			return
		case <-tick.C:
		}
		now := read()
		if now-last < quietBytes && now-releasedAt >= quietBytes {
			debug.FreeOSMemory()
			releasedAt = read()
			f.mu.Lock()
			f.released++
			f.mu.Unlock()
		}
		last = now
	}
}

// Stop puts GOGC back to what it was before Start.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	close(f.done)
	debug.SetGCPercent(f.base)
}

// Releases is how many times the Floor gave an idle process's free
// memory back.
func (f *Floor) Releases() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released
}

// adjust sets GOGC for the live heap the last collection left, and says
// whether the floor still runs.
func (f *Floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.samples)
	var live uint64
	if f.samples[0].Value.Kind() == metrics.KindUint64 {
		live = f.samples[0].Value.Uint64()
	}
	debug.SetGCPercent(Percent(live, f.floor, f.base))
	return true
}

// sentinel is collected once per cycle: its finalizer adjusts GOGC and
// makes the next one. (Large enough not to share a tiny-allocator block
// with other objects, which would keep it alive.)
type sentinel struct {
	f *Floor
	_ [16]byte
}

func (f *Floor) arm() {
	runtime.SetFinalizer(&sentinel{f: f}, func(s *sentinel) {
		if s.f.adjust() {
			s.f.arm()
		}
	})
}

// Percent is the GOGC that puts the heap goal after a collection that
// left live bytes at floor, or base when live·(1+base/100) reaches the
// floor by itself. A live heap of 0 (none measured yet) counts as Go's
// 4 MiB minimum.
func Percent(live, floor uint64, base int) int {
	if live == 0 {
		live = minHeap
	}
	if base < 0 || live+live*uint64(base)/100 >= floor {
		return base
	}
	return int(min((floor-live)*100/live, maxPercent))
}
