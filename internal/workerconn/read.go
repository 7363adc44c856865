package workerconn

// The reading side: one reader goroutine per generation reads frames and
// dispatches them; a handler that would block hands the reading on to a
// new goroutine (Handoff, Yielding).

import (
	"github.com/atoll-runtime/atoll/atollpb"
)

// read reads frames and dispatches them while it is the reader of
// generation gen: a Handoff while it dispatches makes another goroutine
// the reader, and this one returns once its frame is handled (writing
// what the frame queued with Defer: no burst end will).
func (c *Conn) read(gen uint64) {
	for {
		f, err := c.src.next()
		if err != nil {
			c.fail(err)
			return
		}
		c.rstate.Store(gen<<1 | dispatching)
		c.dispatch(f)
		if !c.rstate.CompareAndSwap(gen<<1|dispatching, gen<<1) {
			_ = c.Flush()
			return
		}
		if c.burstEnd != nil && !c.src.more() {
			c.burstEnd()
		}
		if c.isQuiet() && c.rmode.CompareAndSwap(modeReading, modePaused) {
			// A push between the check and the pause wakes nobody: look again.
			if !c.peerQuiet() {
				c.rmode.CompareAndSwap(modePaused, modeReading)
			}
			if c.rmode.Load() != modeReading && !c.pause() {
				return
			}
		}
	}
}

// dispatching is the reader's phase bit while it dispatches a frame.
const dispatching = 1

// Yielding is called by a handler, on the reader goroutine, around work
// that may run long or wait for frames only the reader can read (user
// code run inline): until done is called, Handoff may make another
// goroutine the reader, and a Call made meanwhile does (its reply comes
// through the reader). Outside such work frames are handled in order,
// one at a time, and no Handoff happens.
func (c *Conn) Yielding() (done func()) {
	st := c.rstate.Load()
	c.yield.Store(st)
	return func() { c.yield.CompareAndSwap(st, 0) }
}

// Handoff makes another goroutine the connection's reader if the reader
// is in yielding work (Yielding), and reports whether it did; the reader
// that yielded returns once its handler does. It is safe from any
// goroutine, at any time.
func (c *Conn) Handoff() bool {
	st := c.yield.Load()
	if st&dispatching == 0 {
		return false
	}
	gen := st>>1 + 1
	if !c.rstate.CompareAndSwap(st, gen<<1) {
		return false
	}
	c.yield.CompareAndSwap(st, 0)
	go c.read(gen)
	return true
}

// dispatch hands a frame that arrived to the call it answers, or to the
// handler.
func (c *Conn) dispatch(f *atollpb.Frame) {
	if f.ReplyTo != 0 {
		c.mu.Lock()
		pc := c.pending[f.ReplyTo]
		delete(c.pending, f.ReplyTo)
		var late Late
		if pc != nil && pc.late != nil {
			late = pc.late
			c.abandoned--
		}
		c.mu.Unlock()
		switch {
		case late != nil:
			late(f)
		case pc != nil:
			pc.ch <- f
		}
		return
	}
	c.handler(f)
}
