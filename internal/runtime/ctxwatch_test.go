package runtime

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// fakeHost plays the runtime and its owner for the watches:
// context.AfterFunc for real, the pending tasks in submission order, each
// naming its watch as its owner's record does, and the tasks cancelled.
type fakeHost struct {
	mu        sync.Mutex
	afters    int
	tasks     []fakeTask
	cancelled []ids.TaskID
	fired     chan struct{}
}

type fakeTask struct {
	id       ids.TaskID
	watch    *contextWatch
	finished bool
}

func (h *fakeHost) afterFunc(ctx context.Context, f func()) func() bool {
	h.mu.Lock()
	h.afters++
	h.mu.Unlock()
	return context.AfterFunc(ctx, func() { f(); h.fired <- struct{}{} })
}

func (h *fakeHost) cancelWatched(w *contextWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.tasks {
		if !t.finished && t.watch == w {
			h.cancelled = append(h.cancelled, t.id)
		}
	}
}

func (h *fakeHost) cancelTask(id ids.TaskID, nonRecursive bool) {
	if nonRecursive {
		panic("a context's tasks are cancelled recursively")
	}
	h.mu.Lock()
	h.cancelled = append(h.cancelled, id)
	h.mu.Unlock()
}

// submit watches a new task under ctx, the watch its attach, as the
// runtime does: the watch first, then the task in its owner's table, then
// submitted (its watch may have fired in between).
func (h *fakeHost) submit(ws *contextWatches, ctx context.Context) int {
	w := ws.add(h, ctx)
	id := ids.NewTaskID()
	h.mu.Lock()
	h.tasks = append(h.tasks, fakeTask{id: id, watch: w})
	i := len(h.tasks) - 1
	h.mu.Unlock()
	w.submitted(id)
	return i
}

// finish finishes task i: its owner forgets it, its watch counts it.
func (h *fakeHost) finish(i int) {
	h.mu.Lock()
	h.tasks[i].finished = true
	w := h.tasks[i].watch
	h.mu.Unlock()
	w.forget()
}

// takeCancelled returns the tasks cancelled since the last call, a task
// cancelled twice in a row (by its watch, and as submitted: the second
// does nothing in a runtime) once.
func (h *fakeHost) takeCancelled() []ids.TaskID {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Compact(h.cancelled)
	h.cancelled = nil
	return out
}

// TestContextWatchOnePerContext: tasks submitted under one context share
// one watch, which goes away (and its AfterFunc stops) once they all
// finished; a finished task is not cancelled when its context is done
// later, the pending ones are, in the order they were submitted.
func TestContextWatchOnePerContext(t *testing.T) {
	h := &fakeHost{fired: make(chan struct{}, 4)}
	var ws contextWatches
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3000 {
		h.submit(&ws, context.WithValue(ctx, taskKey{}, i)) // the same Done channel
	}
	if ws.watched() != 1 || h.afters != 1 {
		t.Fatalf("%d watches, %d AfterFuncs for tasks of one context; want 1, 1", ws.watched(), h.afters)
	}
	for i := range h.tasks {
		h.finish(i)
	}
	if ws.watched() != 0 {
		t.Fatalf("%d watches once every task finished", ws.watched())
	}

	h.tasks = nil
	for range 3000 {
		h.submit(&ws, ctx)
	}
	for i := 0; i < len(h.tasks); i += 2 {
		h.finish(i) // the even ones finish
	}
	cancel()
	select {
	case <-h.fired:
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the context fired no watch")
	}
	var want []ids.TaskID
	for i := 1; i < len(h.tasks); i += 2 {
		want = append(want, h.tasks[i].id)
	}
	if got := h.takeCancelled(); !slices.Equal(got, want) {
		t.Fatalf("cancelled %d tasks, want the %d pending ones in submission order", len(got), len(want))
	}
	if ws.watched() != 0 || h.afters != 2 {
		t.Fatalf("after the context was done: %d watches, %d AfterFuncs; want 0, 2", ws.watched(), h.afters)
	}
	for i := 1; i < len(h.tasks); i += 2 {
		h.finish(i) // their cancellations finish them: nothing left to do
	}
	if got := h.takeCancelled(); len(got) != 0 {
		t.Fatalf("finishing the cancelled tasks cancelled %d more", len(got))
	}
}

// TestContextWatchOtherContexts: a context's watch cancels only its own
// tasks.
func TestContextWatchOtherContexts(t *testing.T) {
	h := &fakeHost{fired: make(chan struct{}, 4)}
	var ws contextWatches
	a, cancelA := context.WithCancel(context.Background())
	b, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	ia, ib := h.submit(&ws, a), h.submit(&ws, b)
	cancelA()
	<-h.fired
	if got := h.takeCancelled(); !slices.Equal(got, []ids.TaskID{h.tasks[ia].id}) {
		t.Fatalf("cancelling one context cancelled %v, want only its task", got)
	}
	h.finish(ia)
	h.finish(ib)
	if ws.watched() != 0 {
		t.Fatalf("%d watches left", ws.watched())
	}
}

// TestContextWatchSubmitted: a task whose watch may have fired before it
// named the watch (or before its owner knew it) is cancelled once it did
// if its context is done by then (cancelling an unknown task does
// nothing), unless a non-recursive cancel ended the context; a live
// context cancels nothing.
func TestContextWatchSubmitted(t *testing.T) {
	h := &fakeHost{fired: make(chan struct{}, 4)}
	var ws contextWatches
	live, stop := context.WithCancel(context.Background())
	defer stop()
	task := ids.NewTaskID()
	ws.add(h, live).submitted(task)
	if got := h.takeCancelled(); len(got) != 0 {
		t.Fatalf("a task of a live context cancelled: %v", got)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	w := ws.add(h, done) // fires with no task naming it yet
	<-h.fired
	w.submitted(task)
	if got := h.takeCancelled(); !slices.Equal(got, []ids.TaskID{task}) {
		t.Fatalf("a task of a done context: cancelled %v, want it once submitted", got)
	}
	alone, cancelAlone := context.WithCancelCause(context.Background())
	cancelAlone(errs.ErrCancelNonRecursive)
	w = ws.add(h, alone)
	<-h.fired
	w.submitted(task)
	if got := h.takeCancelled(); len(got) != 0 {
		t.Fatalf("a task of a context ended by a non-recursive cancel was cancelled: %v", got)
	}
}

// TestContextWatchNonRecursive: a context ended by a task's non-recursive
// cancellation cancels nothing it submitted; a context done before the
// task was watched still cancels it.
func TestContextWatchNonRecursive(t *testing.T) {
	h := &fakeHost{fired: make(chan struct{}, 4)}
	var ws contextWatches
	ctx, cancel := context.WithCancelCause(context.Background())
	h.submit(&ws, ctx)
	cancel(errs.ErrCancelNonRecursive)
	<-h.fired
	if got := h.takeCancelled(); len(got) != 0 {
		t.Fatalf("cancelled %d tasks of a context ended by a non-recursive cancel", len(got))
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	i := h.submit(&ws, done)
	<-h.fired
	if got := h.takeCancelled(); !slices.Equal(got, []ids.TaskID{h.tasks[i].id}) {
		t.Fatalf("a task watched under a context already done: cancelled %v", got)
	}
}
