package workerproto

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TaskContext is the context a pushed task runs under: the Server cancels
// it, with a cause, when the task is cancelled, when its worker stops,
// and when the task ends.
type TaskContext interface {
	context.Context
	// Cancel cancels the context with cause (nil: context.Canceled).
	Cancel(cause error)
}

// ContextMaker is an Executor that makes its tasks' contexts itself, when
// they are pushed (a context of its own that carries what it needs of the
// task, in one allocation with the cancellation: a Cancellable inside
// it). A Server whose Executor is not one gives each task a Cancellable.
type ContextMaker interface {
	TaskContext(spec *atollpb.TaskSpec) TaskContext
}

// Cancellable is a TaskContext that costs nothing until it is looked at:
// it makes the cancellable context it stands for (context.WithCancelCause,
// two allocations) only when someone asks for its Done channel or a value
// of a key of type *int (context.Cause does, and so does making a context
// under it). A cancel before that is kept, and the context made later is
// cancelled with its cause as it is made; a task that never looks at its
// context ends without one, cancelled or not. Its Deadline is none and it
// holds no values; its Err is that of the context it stands for. The zero
// value is ready to use; a Cancellable must not be copied after first use.
type Cancellable struct {
	state atomic.Uint32 // ctxFresh, ctxMade or ctxEnded
	mu    sync.Mutex    // making ctx; cause while ended
	// ctx and cancel, once state is made: the context it stands for.
	ctx    context.Context
	cancel context.CancelCauseFunc
	cause  error // the cause it ended with while fresh
}

// The states of a Cancellable.
const (
	ctxFresh uint32 = iota // nothing made, not cancelled
	ctxMade                // ctx and cancel made (cancelled or not)
	ctxEnded               // cancelled (cause) before anything was made
)

// inner returns the context it stands for, making it (cancelled, if it
// ended before) the first time.
func (c *Cancellable) inner() context.Context {
	if c.state.Load() == ctxMade {
		return c.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Load() != ctxMade {
		c.ctx, c.cancel = context.WithCancelCause(context.Background())
		if c.state.Load() == ctxEnded {
			c.cancel(c.cause)
			c.cause = nil
		}
		c.state.Store(ctxMade)
	}
	return c.ctx
}

// Deadline implements context.Context: none.
func (c *Cancellable) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context.
func (c *Cancellable) Done() <-chan struct{} { return c.inner().Done() }

// Err implements context.Context.
func (c *Cancellable) Err() error {
	switch c.state.Load() {
	case ctxFresh:
		return nil
	case ctxEnded:
		return context.Canceled
	}
	return c.ctx.Err()
}

// Value implements context.Context. It holds no values of its own; the
// context package finds a cancellable context (context.Cause, a context
// made under it) by a key of type *int, so such a key is asked of the
// context it stands for.
func (c *Cancellable) Value(key any) any {
	if _, ok := key.(*int); ok {
		return c.inner().Value(key)
	}
	return nil
}

// Cancel implements TaskContext. Cancelled before anything was made, it
// keeps the cause for the context it makes later, if it ever does.
func (c *Cancellable) Cancel(cause error) {
	if c.state.Load() != ctxMade {
		c.mu.Lock()
		if s := c.state.Load(); s != ctxMade {
			if s == ctxFresh {
				c.cause = cause
				c.state.Store(ctxEnded)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
	c.cancel(cause)
}

// taskContext is the context s's executor makes for a task pushed with
// spec, else a Cancellable.
func (s *Server) taskContext(spec *atollpb.TaskSpec) TaskContext {
	if m, ok := s.cfg.Executor.(ContextMaker); ok {
		return m.TaskContext(spec)
	}
	return new(Cancellable)
}
