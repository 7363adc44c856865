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

// fakeHost records the watches' calls: context.AfterFunc for real, and the
// tasks cancelled.
type fakeHost struct {
	mu        sync.Mutex
	afters    int
	cancelled []ids.TaskID
	fired     chan struct{}
}

func (h *fakeHost) afterFunc(ctx context.Context, f func()) func() bool {
	h.mu.Lock()
	h.afters++
	h.mu.Unlock()
	return context.AfterFunc(ctx, func() { f(); h.fired <- struct{}{} })
}

func (h *fakeHost) cancelTask(id ids.TaskID, nonRecursive bool) {
	if nonRecursive {
		panic("a context's tasks are cancelled recursively")
	}
	h.mu.Lock()
	h.cancelled = append(h.cancelled, id)
	h.mu.Unlock()
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
	tasks := make([]ids.TaskID, 3000)
	watches := make([]*contextWatch, len(tasks))
	for i := range tasks {
		tasks[i] = ids.NewTaskID()
		watches[i] = ws.add(h, context.WithValue(ctx, taskKey{}, i), tasks[i]) // the same Done channel
	}
	if ws.watched() != 1 || h.afters != 1 {
		t.Fatalf("%d watches, %d AfterFuncs for tasks of one context; want 1, 1", ws.watched(), h.afters)
	}
	for i := range tasks {
		watches[i].forget(tasks[i])
	}
	if ws.watched() != 0 {
		t.Fatalf("%d watches once every task finished", ws.watched())
	}

	for i := range tasks {
		watches[i] = ws.add(h, ctx, tasks[i])
	}
	for i := 0; i < len(tasks); i += 2 {
		watches[i].forget(tasks[i]) // the even ones finish
	}
	cancel()
	select {
	case <-h.fired:
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the context fired no watch")
	}
	var want []ids.TaskID
	for i := 1; i < len(tasks); i += 2 {
		want = append(want, tasks[i])
	}
	h.mu.Lock()
	got := slices.Clone(h.cancelled)
	h.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("cancelled %d tasks, want the %d pending ones in submission order", len(got), len(want))
	}
	if ws.watched() != 0 || h.afters != 2 {
		t.Fatalf("after the context was done: %d watches, %d AfterFuncs; want 0, 2", ws.watched(), h.afters)
	}
	for i := 1; i < len(tasks); i += 2 {
		watches[i].forget(tasks[i]) // their cancellations finish them: nothing left to do
	}
}

// TestContextWatchSubmitted: a watch made before its task reached its
// owner (the task's attach) cancels the task again once it did if its
// context is done by then (the watch may have fired while the owner did
// not know the task, and cancelling an unknown task does nothing), unless
// a non-recursive cancel ended the context; a live context cancels
// nothing.
func TestContextWatchSubmitted(t *testing.T) {
	h := &fakeHost{fired: make(chan struct{}, 4)}
	var ws contextWatches
	live, stop := context.WithCancel(context.Background())
	defer stop()
	task := ids.NewTaskID()
	ws.add(h, live, task).submitted(task)
	if len(h.cancelled) != 0 {
		t.Fatalf("a task of a live context cancelled: %v", h.cancelled)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	w := ws.add(h, done, task)
	<-h.fired
	w.submitted(task)
	h.mu.Lock()
	got := slices.Clone(h.cancelled)
	h.mu.Unlock()
	if !slices.Equal(got, []ids.TaskID{task, task}) {
		t.Fatalf("a task of a done context: cancelled %v, want it by the watch and again once submitted", got)
	}
	alone, cancelAlone := context.WithCancelCause(context.Background())
	cancelAlone(errs.ErrCancelNonRecursive)
	w = ws.add(h, alone, ids.NewTaskID())
	<-h.fired
	w.submitted(task)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.cancelled) != 2 {
		t.Fatalf("a task of a context ended by a non-recursive cancel was cancelled: %v", h.cancelled)
	}
}

// TestContextWatchNonRecursive: a context ended by a task's non-recursive
// cancellation cancels nothing it submitted; a context done before the
// task was watched still cancels it.
func TestContextWatchNonRecursive(t *testing.T) {
	h := &fakeHost{fired: make(chan struct{}, 4)}
	var ws contextWatches
	ctx, cancel := context.WithCancelCause(context.Background())
	ws.add(h, ctx, ids.NewTaskID())
	cancel(errs.ErrCancelNonRecursive)
	<-h.fired
	if len(h.cancelled) != 0 {
		t.Fatalf("cancelled %d tasks of a context ended by a non-recursive cancel", len(h.cancelled))
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	task := ids.NewTaskID()
	ws.add(h, done, task)
	<-h.fired
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.cancelled, []ids.TaskID{task}) {
		t.Fatalf("a task watched under a context already done: cancelled %v", h.cancelled)
	}
}
