// Package gcfloor keeps a process with a small live heap from collecting
// garbage every few megabytes.
//
// Go's collector starts a cycle when the heap reaches its goal, the live
// heap times 1+GOGC/100 (at least 4 MiB). A worker process holds little
// between tasks, so its goal stays a few tens of MiB, while one task of a
// dataset decodes and computes over tens of MiB of fresh buffers: it ran
// a collection or two per task, and the returned spans were zeroed again
// for the next. On two cores that made a Parquet pipeline's tasks 20–25%
// slower than the same kernels in a goroutine of a larger process (before
// those tasks recycled their Arrow buffers; since, the floor's gain is in
// short tasks: a seventh of a worker's CPU per no-op task).
//
// A Floor holds a ballast: one allocation of twice floor bytes that
// nothing writes, so the system never backs it with memory (a fresh span
// from the system is zero already, and the collector does not scan a
// byte slice), but the collector counts it as live. It also sets GOGC to
// Percent (50). The goal becomes 1.5·(live+2·floor) instead of 2·live:
// the process may build up floor bytes of garbage and half its live heap
// more before it collects. A process whose heap is small collects a few
// times less often than with Go's default; one whose live heap is large
// holds half as much garbage as with Go's default. (A ballast of floor
// bytes at GOGC 100, the first version, let a worker hold its live heap
// again in garbage: with 20 MB live, 57 MB resident where this holds
// 38, at the same speed. A tuner that raised GOGC after each collection
// was tried before that; its setting lands a little after the cycle that
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
// worker's live heap of 20 MB, a collection every 18 MB or so of
// allocation. It was 64 MiB until data tasks recycled their Arrow
// buffers, then 16 MiB at GOGC 100 (a collection every 37 MB at 20 MB
// live), which ran a Parquet pipeline no faster and held 19 MB more in
// each busy worker.
const DefaultFloor = 8 << 20

// Percent is the GOGC a Floor sets.
const Percent = 50

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
	percent  int           // GOGC before Start
	done     chan struct{} // closed by Stop: ends the idle watch
	released int           // idle releases (Releases)
}

// Start allocates twice floor bytes of ballast, sets GOGC to Percent and
// starts the idle watch. With the collector off (GOGC=off) or a floor of
// a byte or none, it does none of these: Go's default collector runs.
// The Floor lives until Stop whether or not the caller keeps it: its
// watch goroutine holds it.
func Start(floor uint64) *Floor {
	f := &Floor{done: make(chan struct{})}
	gc := debug.SetGCPercent(Percent) // there is no reading it without setting it
	if gc < 0 || floor <= 1 {
		debug.SetGCPercent(gc)
		close(f.done)
		return f
	}
	f.percent = gc
	f.ballast = make([]byte, 2*floor)
	go f.watchIdle()
	return f
}

// Stop lets the ballast go, gives GOGC back its setting before Start and
// ends the idle watch.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ballast == nil {
		return
	}
	f.ballast = nil
	debug.SetGCPercent(f.percent)
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
