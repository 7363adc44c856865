package workerconn

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Lone is a caller's claim on the reading of a paused connection (lazy
// reading): the last task or actor call it wrote alone, with nothing else
// in flight on that connection, whose connection's reader it did not wake
// (Hold). A Get of that task reads the result itself (Await); anything
// else the caller does first wakes the reader (Wake), and so does a
// claim on another connection. A caller's goroutine that waits without
// reading (Park) has every later claim woken at once: a task whose
// arguments became ready is pushed by the goroutine that delivered them,
// and the result it waits for may come through that task's connection.
//
// One Lone serves one caller (a driver) and all its goroutines; the zero
// value holds nothing.
type Lone struct {
	// held says conn is set: the fast path of Wake, called for every
	// submission.
	held   atomic.Bool
	parked atomic.Int32
	// mu guards conn and task.
	mu   sync.Mutex
	conn *Conn
	task ids.TaskID
}

// Hold records that task was written alone to c and c's reader was left
// paused, for a Get of task to read its result. The connection held
// before, if another, is woken; if a goroutine of the caller waits
// without reading (Park), c is woken at once instead.
func (l *Lone) Hold(c *Conn, task ids.TaskID) {
	l.mu.Lock()
	prev := l.conn
	l.conn, l.task = c, task
	l.held.Store(true)
	l.mu.Unlock()
	if prev != nil && prev != c {
		prev.Wake()
	}
	if l.parked.Load() > 0 {
		l.Wake()
	}
}

// Wake wakes the reader of the connection held, if any, and forgets it.
func (l *Lone) Wake() {
	if !l.held.Load() {
		return
	}
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.held.Store(false)
	l.mu.Unlock()
	if c != nil {
		c.Wake()
	}
}

// Await reads task's result on the calling goroutine until done reports
// true or ctx ends, if task is the one held and its connection's reader
// is still paused (Conn.Borrow), and reports whether it did. A claim on
// anything else is woken: the caller waits for something else.
func (l *Lone) Await(ctx context.Context, task ids.TaskID, done func() bool) bool {
	if !l.held.Load() {
		return false
	}
	l.mu.Lock()
	c := l.conn
	if c == nil || l.task != task {
		l.mu.Unlock()
		l.Wake()
		return false
	}
	l.conn = nil
	l.held.Store(false)
	l.mu.Unlock()
	return c.Borrow(ctx, done)
}

// Park marks a goroutine of the caller that waits without reading, until
// Unpark: the claim held now, and any made meanwhile, are woken.
func (l *Lone) Park() {
	l.parked.Add(1)
	l.Wake()
}

// Unpark ends a Park.
func (l *Lone) Unpark() { l.parked.Add(-1) }
