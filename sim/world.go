package sim

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Epoch is the simulated time every run starts at.
var Epoch = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// World is one simulated cluster: its nodes and processes, the messages
// in flight, the timers, the threads running user code, and the one
// seeded generator everything random comes from. Only one goroutine runs
// at a time: the loop (Run's caller) or one thread it resumed.
type World struct {
	cfg Config
	now time.Time

	events eventHeap
	seq    uint64
	// steps counts the events run (maxSteps bounds them).
	steps uint64
	// rng streams, each seeded from (seed, stream): scheduling choices,
	// the network, the disks, task durations. Faults have their own
	// (faults.go) so that a schedule is drawn before the run.
	rSched, rNet, rDisk, rWork *rand.Rand
	idSeq                      uint32

	nodes   []*node
	byNode  map[ids.NodeID]*node
	procs   map[ids.WorkerID]*proc
	byPID   map[string]*proc
	byName  map[string]*node
	nodeSeq int

	threads  []*thread
	current  *thread
	yield    chan struct{}
	threadID int

	gcs     *gcs
	driver  *proc
	history *History
	// watches are the contexts the runtimes watch (context.AfterFunc).
	watches []*watch
	// onDriverStop, if set, is what the driver's Shutdown does (a
	// session's end: Session.onStop).
	onDriverStop func() error
	net          *network
	log          *eventLog
	check        *checks
	trace        *tracer

	faults *faultRun
	// stopped: the loop stops at the next event.
	stopped bool
	// failure is the first fatal problem of the run (a panic, a broken
	// invariant): the run stops with it.
	failure *Failure
}

// event is something that happens at a time: its function runs on the
// loop.
type event struct {
	at  time.Time
	seq uint64
	fn  func()
	// periodic events (gossip, lease ticks) do not keep a run from being
	// quiet.
	periodic bool
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}

// at schedules fn at t (not before now).
func (w *World) at(t time.Time, fn func()) *event {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	e := &event{at: t, seq: w.seq, fn: fn}
	heap.Push(&w.events, e)
	return e
}

// after schedules fn d from now.
func (w *World) after(d time.Duration, fn func()) *event { return w.at(w.now.Add(d), fn) }

// every schedules fn every d, from d on, as a periodic event.
func (w *World) every(d time.Duration, fn func()) {
	var tick func()
	tick = func() {
		fn()
		w.after(d, tick).periodic = true
	}
	w.after(d, tick).periodic = true
}

// newID returns a fresh id: a counter in its first four bytes (what
// ids.Short prints), so ids replay and read as "0000002a".
func (w *World) newID() ids.ID16 {
	w.idSeq++
	var id ids.ID16
	binary.BigEndian.PutUint32(id[:4], w.idSeq)
	copy(id[4:], "atoll-sim\x00\x00\x00")
	return id
}

// jitter returns a random duration in [0, d).
func (w *World) jitter(r *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(d)))
}

// since is a time as the offset from Epoch, for the log.
func since(t time.Time) time.Duration { return t.Sub(Epoch) }

// stream returns the generator of one stream of the seed.
func stream(seed uint64, n uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15*n+1))
}

// maxSteps bounds the events of a run: a run of the stock workloads takes
// a few thousand to a hundred thousand; far more is a loop in the code
// under test (or the simulator's) that never ends, and it fails the run
// rather than grow until the machine runs out of memory.
const maxSteps = 2_000_000

// step runs the next event; false when there is none or the run stopped.
func (w *World) step() bool {
	if w.stopped || w.failure != nil || len(w.events) == 0 {
		return false
	}
	if w.steps++; w.steps > maxSteps {
		w.fail("runaway", "more than %d events ran (%d pending): a loop that never ends, each turn waiting a little", maxSteps, len(w.events))
		return false
	}
	e := heap.Pop(&w.events).(*event)
	if e.at.After(w.now) {
		w.now = e.at
	}
	e.fn()
	w.fireWatches()
	w.wakeParked()
	return true
}

// runUntil steps until cond holds, no event is left, or the simulated
// time passes limit; it reports whether cond held.
func (w *World) runUntil(limit time.Time, cond func() bool) bool {
	for !cond() {
		if w.stopped || w.failure != nil || len(w.events) == 0 || w.events[0].at.After(limit) {
			return cond()
		}
		w.step()
	}
	return true
}

// quiet reports whether nothing but periodic events is pending and no
// thread can run.
func (w *World) quiet() bool {
	for _, e := range w.events {
		if !e.periodic {
			return false
		}
	}
	for _, t := range w.threads {
		if t.state == threadRunnable {
			return false
		}
	}
	return true
}

// fail records the run's first fatal problem and stops it.
func (w *World) fail(kind, format string, args ...any) {
	if w.failure != nil {
		return
	}
	w.failure = &Failure{Checker: kind, Message: fmt.Sprintf(format, args...), At: since(w.now)}
	w.log.add("FAIL %s: %s", kind, w.failure.Message)
	w.stopped = true
}

// liveNodes returns the nodes that are up, in order.
func (w *World) liveNodes() []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.up {
			out = append(out, n)
		}
	}
	return out
}

// sortedProcs returns the processes in creation order.
func (w *World) sortedProcs() []*proc {
	out := make([]*proc, 0, len(w.procs))
	for _, p := range w.procs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}
