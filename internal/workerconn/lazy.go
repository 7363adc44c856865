package workerconn

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Lazy reading. A synchronous round trip whose reply the reader goroutine
// reads and hands over to the goroutine waiting for it costs two wake-ups
// where one would do: on two vCPUs it halves the rate of a bare
// ping-pong between two processes. So while a socket connection is quiet
// (SetQuiet: its user expects nothing from the peer, and no Call waits)
// its reader stops reading after a frame (it pauses), and a goroutine
// that then waits for a frame it expects reads it itself (Borrow),
// dispatching whatever comes before it as the reader would, and gives the
// reading back when it has its frame: paused again if the connection is
// quiet, else to the reader. A write that expects an answer wakes a
// paused reader (Wake; Call does it itself). A paused reader looks at its
// socket now and then (pauseFirst to pauseMost apart) and reads again if
// the peer sent something nobody waits for.
//
// The reading mode (rmode) orders the two: reading (the reader goroutine
// reads), paused (nobody does), borrowed (a waiter does). Only the
// goroutine whose mode it is touches the read buffer.
const (
	modeReading  = 0
	modePaused   = 1
	modeBorrowed = 2
)

// pauseFirst and pauseMost space a paused reader's looks at its socket:
// it reads again once something came that nobody waits for (the first
// look after pauseFirst, each next one twice as late, up to pauseMost).
const (
	pauseFirst = 2 * time.Millisecond
	pauseMost  = 20 * time.Millisecond
)

// SetQuiet lets the reader of a socket connection pause while q reports
// that nothing is expected from the peer (and no Call waits), for a
// waiter to Borrow the reading. q is called by the goroutine reading,
// after a frame; it must not block. A pipe connection never pauses.
func (c *Conn) SetQuiet(q func() bool) {
	if _, ok := c.c.(socket); !ok {
		return
	}
	c.quiet.Store(&q)
}

// isQuiet reports whether the reader may pause: nothing is left in the
// read buffer and the peer owes nothing (the goroutine reading only).
func (c *Conn) isQuiet() bool { return !c.src.more() && c.peerQuiet() }

// peerQuiet is isQuiet without the look at the read buffer, which only
// the goroutine reading may take.
func (c *Conn) peerQuiet() bool {
	q := c.quiet.Load()
	if q == nil || !(*q)() {
		return false
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	return n == 0
}

// Wake makes a paused reader read again: call it after a write that
// expects an answer nobody will Borrow for. Safe from any goroutine.
func (c *Conn) Wake() {
	if c.rmode.CompareAndSwap(modePaused, modeReading) {
		select {
		case c.resume <- struct{}{}:
		default:
		}
	}
}

// pause parks the reader while the connection is paused or borrowed; it
// returns false when the connection ended.
func (c *Conn) pause() bool {
	wait := pauseFirst
	if c.pauseTimer == nil {
		c.pauseTimer = time.NewTimer(wait)
	} else {
		c.pauseTimer.Reset(wait)
	}
	for {
		select {
		case <-c.resume:
		case <-c.pauseTimer.C:
			if c.rmode.Load() == modePaused && c.readable() {
				c.rmode.CompareAndSwap(modePaused, modeReading)
			}
			wait = min(2*wait, pauseMost)
			c.pauseTimer.Reset(wait)
		case <-c.done:
			return false
		}
		if c.rmode.Load() == modeReading {
			c.pauseTimer.Stop()
			return true
		}
	}
}

// readable reports whether the socket has something to read, without
// reading it.
func (c *Conn) readable() bool {
	sock, ok := c.c.(socket)
	if !ok {
		return true
	}
	rc := rawConnOf(sock.c)
	if rc == nil {
		return true
	}
	ready := true
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		ready = err != nil || n > 0
	})
	return ready
}

// Borrow reads and dispatches frames on the calling goroutine until done
// reports true or ctx ends, if the reader is paused, and reports whether
// it did (false: the caller waits as it would have). It hands the reading
// back at a frame's end: paused if the connection is quiet, else to the
// reader. A frame that cannot be read ends the connection, as it would
// for the reader; ctx's end does not (the read is cut short by a read
// deadline, cleared before anyone reads again).
func (c *Conn) Borrow(ctx context.Context, done func() bool) bool {
	sock, ok := c.c.(socket)
	if !ok || !c.rmode.CompareAndSwap(modePaused, modeBorrowed) {
		return false
	}
	var stop func() bool
	if ctx.Done() != nil {
		c.borrowMu.Lock()
		c.borrowing = true
		c.borrowMu.Unlock()
		stop = context.AfterFunc(ctx, func() {
			c.borrowMu.Lock()
			if c.borrowing {
				_ = sock.c.SetReadDeadline(time.Unix(1, 0))
			}
			c.borrowMu.Unlock()
		})
	}
	src, _ := c.src.(*socketReader)
	failed, handBack := false, false
	for !done() {
		// A frame larger than the read buffer is read a part at a time
		// (readFrame): cut short by ctx, its parts would be lost. The
		// reader reads those; a header only peeked loses nothing.
		big, err := src.large()
		if err == nil && big {
			handBack = true
			break
		}
		var f *atollpb.Frame
		if err == nil {
			f, err = c.src.next()
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				break // ctx ended: the frame waits for the next reader
			}
			c.fail(err)
			failed = true
			break
		}
		c.dispatch(f)
		if c.burstEnd != nil && !c.src.more() {
			c.burstEnd()
		}
	}
	if stop != nil {
		stop()
		c.borrowMu.Lock()
		c.borrowing = false
		_ = sock.c.SetReadDeadline(time.Time{})
		c.borrowMu.Unlock()
	}
	if !failed && !handBack && c.isQuiet() {
		c.rmode.Store(modePaused)
		return true
	}
	c.rmode.Store(modeReading)
	select {
	case c.resume <- struct{}{}:
	default:
	}
	return true
}
