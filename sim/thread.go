package sim

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"time"
)

// Threads run user code and the runtime's blocking calls: the workload
// (the driver's main), each task attempt and actor call, a constructor.
// Each is a goroutine, but only one runs at a time: the loop resumes a
// thread and waits until it parks (runtime.SimEnv.Park: a Get whose
// object is not there yet) or ends. A parked thread's condition is
// evaluated after every event; once it holds the thread is scheduled to
// resume, after a random jitter drawn from the seed, so that threads
// ready at once run in a seeded order.

type threadState uint8

const (
	threadRunnable threadState = iota + 1 // scheduled to run
	threadRunning
	threadParked
	threadDone
)

type thread struct {
	w     *World
	id    int
	name  string
	p     *proc // nil for the simulator's own threads
	state threadState
	wake  chan struct{}
	ready func() bool
	// killed: its process died; it exits at its next park.
	killed bool
	// ctx is the context of the code it runs; cancel ends it (a kill,
	// a cancelled task).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// since is when it parked.
	since time.Time
	// spins counts its parks in a row that did not wait (maxSpins).
	spins int
}

// maxSpins bounds the parks in a row whose condition already held: a
// thread that never waits is a loop that never ends, and fails the run
// instead of holding the simulator's loop for good.
const maxSpins = 1_000_000

type threadKey struct{}

// Sleep parks the calling thread of a simulation (the workload, a task, an
// actor call) for d of simulated time; ctx is the context the simulation
// gave it, or one derived from it.
func Sleep(ctx context.Context, d time.Duration) error {
	t, _ := ctx.Value(threadKey{}).(*thread)
	if t == nil {
		return errNotSimulated
	}
	if d > 0 {
		t.w.sleep(d)
	}
	return ctx.Err()
}

// Now is the simulated clock of the node the calling thread runs on.
func Now(ctx context.Context) (time.Time, error) {
	t, _ := ctx.Value(threadKey{}).(*thread)
	if t == nil {
		return time.Time{}, errNotSimulated
	}
	if t.p != nil {
		return t.p.node.now(), nil
	}
	return t.w.now, nil
}

var errNotSimulated = fmt.Errorf("sim: not on a thread of a simulation (use the context the simulator gave the workload or the task)")

// errThreadKilled is the cause of a killed thread's context.
var errThreadKilled = fmt.Errorf("sim: the thread's process died")

// spawn starts f as a thread of process p (nil: the simulator's own),
// runnable after a jitter.
func (w *World) spawn(p *proc, name string, f func(ctx context.Context)) *thread {
	w.threadID++
	t := &thread{w: w, id: w.threadID, name: name, p: p, state: threadRunnable, wake: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancelCause(context.WithValue(context.Background(), threadKey{}, t))
	w.threads = append(w.threads, t)
	if p != nil {
		p.threads = append(p.threads, t)
	}
	go t.main(f)
	w.after(w.jitter(w.rSched, w.cfg.Jitter), func() { w.run(t) })
	return t
}

func (t *thread) main(f func(ctx context.Context)) {
	<-t.wake
	defer func() {
		if r := recover(); r != nil {
			t.w.fail("panic", "thread %s panicked: %v\n%s", t.name, r, debug.Stack())
		}
		t.state = threadDone
		t.w.yield <- struct{}{}
	}()
	if t.killed {
		return
	}
	f(t.ctx)
}

// run resumes t on the loop's behalf and waits until it parks or ends.
func (w *World) run(t *thread) {
	if t.state == threadDone {
		return
	}
	t.state = threadRunning
	w.current = t
	w.log.add("run %s", t.name)
	t.wake <- struct{}{}
	<-w.yield
	w.current = nil
	if t.state == threadDone {
		w.removeThread(t)
	}
}

func (w *World) removeThread(t *thread) {
	for i, x := range w.threads {
		if x == t {
			w.threads = append(w.threads[:i], w.threads[i+1:]...)
			break
		}
	}
	if p := t.p; p != nil {
		for i, x := range p.threads {
			if x == t {
				p.threads = append(p.threads[:i], p.threads[i+1:]...)
				break
			}
		}
	}
}

// park blocks the current thread until ready holds (runtime.SimEnv.Park).
func (w *World) park(ready func() bool) {
	t := w.current
	if t == nil {
		panic("sim: Park outside a thread of the simulation (on the loop, or on a goroutine the simulator did not start)")
	}
	if t.killed {
		goruntime.Goexit()
	}
	if ready() {
		if t.spins++; t.spins > maxSpins {
			w.fail("runaway", "thread %s went on %d times in a row without waiting: a loop that never ends", t.name, maxSpins)
			goruntime.Goexit()
		}
		return
	}
	t.spins = 0
	t.ready, t.state, t.since = ready, threadParked, w.now
	w.yield <- struct{}{}
	<-t.wake
	t.ready = nil
	if t.killed {
		goruntime.Goexit()
	}
}

// sleep parks the current thread for d of simulated time.
func (w *World) sleep(d time.Duration) {
	fired := false
	w.after(d, func() { fired = true })
	w.park(func() bool { return fired })
}

// wakeParked schedules the parked threads whose condition holds, in
// thread order, each after a jitter.
func (w *World) wakeParked() {
	for _, t := range w.threads {
		if t.state != threadParked || !t.ready() {
			continue
		}
		t.state = threadRunnable
		w.after(w.jitter(w.rSched, w.cfg.Jitter), func() { w.run(t) })
	}
}

// kill ends the threads of a process that died: each is cancelled and
// exits at its next park (its deferred calls run; the process's runtime
// is closed, so they do nothing that reaches the world).
func (w *World) killThreads(p *proc) {
	for _, t := range p.threads {
		t.killed = true
		t.cancel(errThreadKilled)
		if t.state == threadParked {
			t.state = threadRunnable
			w.after(0, func() { w.run(t) })
		}
	}
}

// parkedReport lists the parked threads, for a run that hangs.
func (w *World) parkedReport() string {
	s := ""
	for _, t := range w.threads {
		if t.state == threadParked {
			s += fmt.Sprintf("\n  %s (parked since %v)", t.name, since(t.since))
		}
	}
	return s
}
