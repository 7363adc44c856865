package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// contextWatches cancels the tasks submitted under a context once it is
// done, with one context.AfterFunc per context in use rather than one per
// task: a watch per task cost ~150 bytes and an entry in the context's
// own table of children, which Go never shrinks, so a million tasks
// submitted under one context kept tens of MiB after they finished.
//
// A watch keeps no table of most of its tasks either, only how many are
// pending: a task whose attach is the watch itself is found, when the
// watch fires, in its owner's groups of pending tasks (owner.Config.Group:
// nothing is indexed before a watch first fires, so a task submitted
// under a cancellable context costs its watch nothing but a count). A
// task with a taskAttach names its watch after the owner has it; the
// watch lists those (spanned), compacted against its count.
//
// Contexts are keyed by their Done channel: contexts that share it (a
// context.WithValue of another) are done, with the same cause, together.
type contextWatches struct {
	mu     sync.Mutex
	byDone map[<-chan struct{}]*contextWatch
}

// watchHost runs the watches' functions: the Runtime.
type watchHost interface {
	// afterFunc runs f once ctx is done, never on the calling goroutine.
	afterFunc(ctx context.Context, f func()) (stop func() bool)
	// cancelWatched cancels (recursively) the pending tasks watched by
	// w, in the order they were submitted.
	cancelWatched(w *contextWatch)
	// cancelTask cancels one task (recursively).
	cancelTask(id ids.TaskID, nonRecursive bool)
}

// contextWatch is one watched context and how many of its tasks are
// pending.
type contextWatch struct {
	ws      *contextWatches
	host    watchHost
	ctx     context.Context
	stop    func() bool
	pending int  // tasks watched and not forgotten
	ended   bool // fired, or stopped with no task left
	// spanned are the taskAttaches that named the watch (finished ones
	// among them until compacted: at most twice pending, and 64).
	spanned []*taskAttach
}

// watchContext records that a task is cancelled (recursively) when ctx is
// done, unless ctx is the context of a task cancelled alone (Cancel with
// NonRecursive). ctx.Done() must not be nil. The task must name the
// watch in its owner's record (its attach, or its taskAttach's watch)
// before its owner can see ctx done, or call submitted once it does;
// its forget is called when the task finishes.
func (rt *Runtime) watchContext(ctx context.Context) *contextWatch {
	return rt.watches.add(rt, ctx)
}

func (ws *contextWatches) add(host watchHost, ctx context.Context) *contextWatch {
	done := ctx.Done()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.byDone[done]
	if w == nil {
		if ws.byDone == nil {
			ws.byDone = map[<-chan struct{}]*contextWatch{}
		}
		w = &contextWatch{ws: ws, host: host, ctx: ctx}
		ws.byDone[done] = w
		w.stop = host.afterFunc(ctx, w.fire) // never runs here, under mu
	}
	w.pending++
	return w
}

// submitted cancels task if its context is done already: the watch may
// have fired before the task named it in its owner's record (or before
// the owner knew the task), and cancelling a task twice does nothing.
func (w *contextWatch) submitted(task ids.TaskID) {
	if w.ctx.Err() != nil && !errors.Is(context.Cause(w.ctx), errs.ErrCancelNonRecursive) {
		w.host.cancelTask(task, false)
	}
}

// forget counts a watched task finished; the context's watch stops once
// it has no task left.
func (w *contextWatch) forget() {
	ws := w.ws
	ws.mu.Lock()
	w.pending--
	if len(w.spanned) > 2*w.pending+64 {
		w.spanned = slices.DeleteFunc(w.spanned, (*taskAttach).isFinished)
	}
	if w.ended || w.pending > 0 {
		ws.mu.Unlock()
		return
	}
	w.ended = true
	delete(ws.byDone, w.ctx.Done())
	ws.mu.Unlock()
	w.stop()
}

// fire cancels the pending tasks of a context that is done, in the order
// they were submitted.
func (w *contextWatch) fire() {
	ws := w.ws
	ws.mu.Lock()
	if w.ended {
		ws.mu.Unlock()
		return
	}
	w.ended = true
	delete(ws.byDone, w.ctx.Done())
	pending := w.pending
	ws.mu.Unlock()
	if pending == 0 || errors.Is(context.Cause(w.ctx), errs.ErrCancelNonRecursive) {
		return
	}
	w.host.cancelWatched(w)
}

// spannedTask records a taskAttach that named w (setWatch).
func (w *contextWatch) spannedTask(a *taskAttach) {
	w.ws.mu.Lock()
	w.spanned = append(w.spanned, a)
	w.ws.mu.Unlock()
}

// takeSpanned returns the taskAttaches that named w and forgets them.
func (w *contextWatch) takeSpanned() []*taskAttach {
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	s := w.spanned
	w.spanned = nil
	return s
}

// watchGroup is the owner's Config.Group: a task whose attach is a
// context's watch is in that watch's group.
func watchGroup(attach any) any {
	if w, ok := attach.(*contextWatch); ok {
		return w
	}
	return nil
}

// cancelWatched cancels the pending tasks w watches, in submission order.
func (rt *Runtime) cancelWatched(w *contextWatch) {
	spanned := w.takeSpanned()
	rt.owner.do(func(t *owner.Table) {
		tasks := t.TakeGroup(w)
		for _, a := range spanned {
			if a.watchedBy(w) {
				tasks = append(tasks, a.task)
			}
		}
		if len(spanned) > 0 {
			tasks = t.InSubmissionOrder(tasks)
		}
		for _, id := range tasks {
			t.Cancel(id, false)
		}
	})
}

// watched is how many contexts have tasks watched.
func (ws *contextWatches) watched() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.byDone)
}
