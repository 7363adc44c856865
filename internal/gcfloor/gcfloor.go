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
// A Floor holds a ballast: one allocation of floor bytes that nothing
// writes, so the system never backs it with memory (a fresh span from
// the system is zero already, and the collector does not scan a byte
// slice), but the collector counts it as live. The goal becomes
// 2·(live+floor) instead of 2·live: the process may build up live+floor
// bytes of garbage, at least floor, before it collects. A process whose
// live heap is large hardly notices; one whose heap is small collects a
// few times less often. (A tuner that raised GOGC after each collection
// was tried first; its setting lands a little after the cycle that
// measured the live heap, and a cycle run with a GOGC meant for a small
// heap over a large one lets the heap grow many times over.)
//
// The cost is memory: up to floor more garbage between collections. So
// that an idle process does not keep it, a Floor also watches the bytes
// allocated: after a second with less than a MiB allocated, it collects
// and returns the free memory to the system once (debug.FreeOSMemory),
// and again only after allocation resumes.
package gcfloor

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// DefaultFloor is a worker process's floor unless configured: with a
// worker's live heap of a few tens of MiB, a collection every 50 MiB or
// so of allocation. It was 64 MiB until data tasks recycled their Arrow
// buffers; since then 16 MiB runs a Parquet pipeline as fast and an
// out-of-core sort faster, with about 100 MB less garbage per worker.
const DefaultFloor = 16 << 20

// Idle release: a process that allocated less than quietBytes over a
// quietPeriod is idle; it gives its free memory back once.
const (
	quietPeriod = time.Second
	quietBytes  = 1 << 20
)

// Floor keeps floor bytes of ballast until Stop.
type Floor struct {
	mu       sync.Mutex
	ballast  []byte
	done     chan struct{} // closed by Stop: ends the idle watch
	released int           // idle releases (Releases)
}

// Start allocates floor bytes of ballast and starts the idle watch. With
// the collector off (GOGC=off), it does neither. The Floor lives until
// Stop whether or not the caller keeps it: its watch goroutine holds it.
func Start(floor uint64) *Floor {
	f := &Floor{done: make(chan struct{})}
	gc := debug.SetGCPercent(100) // there is no reading it without setting it
	debug.SetGCPercent(gc)
	if gc < 0 || floor == 0 {
		close(f.done)
		return f
	}
	f.ballast = make([]byte, floor)
	go f.watchIdle()
	return f
}

// Stop lets the ballast go and ends the idle watch.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ballast == nil {
		return
	}
	f.ballast = nil
	close(f.done)
}

// Releases is how many times the Floor gave an idle process's free
// memory back.
func (f *Floor) Releases() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released
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
