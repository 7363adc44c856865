package runtime

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/atoll-runtime/atoll/internal/compact"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// contextWatches cancels the tasks submitted under a context once it is
// done, with one context.AfterFunc per context in use rather than one per
// task: a watch per task cost ~150 bytes and an entry in the context's
// own table of children, which Go never shrinks, so a million tasks
// submitted under one context kept tens of MiB after they finished.
//
// Contexts are keyed by their Done channel: contexts that share it (a
// context.WithValue of another) are done, with the same cause, together.
type contextWatches struct {
	mu     sync.Mutex
	byDone map[<-chan struct{}]*contextWatch
	seq    uint64
}

// watchHost runs the watches' functions: the Runtime.
type watchHost interface {
	// afterFunc runs f once ctx is done, never on the calling goroutine.
	afterFunc(ctx context.Context, f func()) (stop func() bool)
	cancelTask(id ids.TaskID, nonRecursive bool)
}

// contextWatch is one watched context and its tasks still pending, by
// the order they were watched in.
type contextWatch struct {
	ws    *contextWatches
	host  watchHost
	ctx   context.Context
	stop  func() bool
	tasks map[ids.TaskID]uint64 // nil once fired or stopped
	mark  compact.Mark
}

// watchContext records that task is cancelled (recursively) when ctx is
// done, unless ctx is the context of a task cancelled alone (Cancel with
// NonRecursive). ctx.Done() must not be nil. The watch's forget is called
// when the task finishes.
func (rt *Runtime) watchContext(ctx context.Context, task ids.TaskID) *contextWatch {
	return rt.watches.add(rt, ctx, task)
}

func (ws *contextWatches) add(host watchHost, ctx context.Context, task ids.TaskID) *contextWatch {
	done := ctx.Done()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.byDone[done]
	if w == nil {
		if ws.byDone == nil {
			ws.byDone = map[<-chan struct{}]*contextWatch{}
		}
		w = &contextWatch{ws: ws, host: host, ctx: ctx, tasks: map[ids.TaskID]uint64{}}
		ws.byDone[done] = w
		w.stop = host.afterFunc(ctx, w.fire) // never runs here, under mu
	}
	ws.seq++
	w.tasks[task] = ws.seq
	return w
}

// submitted cancels task if the watch fired before its owner knew it (a
// watch made before the task's submission, as its attach): cancelling
// a task the owner does not know yet does nothing.
func (w *contextWatch) submitted(task ids.TaskID) {
	if w.ctx.Err() != nil && !errors.Is(context.Cause(w.ctx), errs.ErrCancelNonRecursive) {
		w.host.cancelTask(task, false)
	}
}

// forget forgets a finished task; the context's watch stops once it has
// no task left.
func (w *contextWatch) forget(task ids.TaskID) {
	ws := w.ws
	ws.mu.Lock()
	if w.tasks == nil {
		ws.mu.Unlock()
		return
	}
	delete(w.tasks, task)
	if len(w.tasks) > 0 {
		w.tasks = compact.Map(w.tasks, &w.mark)
		ws.mu.Unlock()
		return
	}
	w.tasks = nil
	delete(ws.byDone, w.ctx.Done())
	ws.mu.Unlock()
	w.stop()
}

// fire cancels the pending tasks of a context that is done, in the order
// they were submitted.
func (w *contextWatch) fire() {
	ws := w.ws
	ws.mu.Lock()
	tasks := w.tasks
	if tasks != nil {
		w.tasks = nil
		delete(ws.byDone, w.ctx.Done())
	}
	ws.mu.Unlock()
	if len(tasks) == 0 || errors.Is(context.Cause(w.ctx), errs.ErrCancelNonRecursive) {
		return
	}
	order := make([]ids.TaskID, 0, len(tasks))
	for id := range tasks {
		order = append(order, id)
	}
	slices.SortFunc(order, func(a, b ids.TaskID) int { return cmp.Compare(tasks[a], tasks[b]) })
	for _, id := range order {
		w.host.cancelTask(id, false)
	}
}

// watched is how many contexts have tasks watched.
func (ws *contextWatches) watched() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.byDone)
}
