// Package workerconn carries the worker protocol (atollpb.Frame) between a
// raylet and a worker: length-prefixed protobuf frames, one-way messages
// and request/reply pairs in both directions, one reader goroutine per
// connection, writes group-committed (one hand-off per burst of frames,
// whatever goroutines made them).
//
// A Conn runs over one of two transports (an Endpoint):
//
//   - Socket: a stream socket, the socket pair between a raylet and a
//     worker process (socket.go). The reader reads 64 KiB at a time.
//   - Pipe: an in-memory connection between two ends in one process, for
//     a worker runtime on goroutines of the raylet's process (pipe.go). A
//     burst of frames is marshalled once into a buffer that is handed to
//     the peer's reader, which unmarshals each frame straight from it and
//     gives the buffer back for reuse: no system call, no copy of the
//     bytes between the two (proto.Unmarshal copies what it keeps).
//
// Both carry the same frames with the same bounds and the same ordering,
// so the protocol above them cannot tell them apart. The reader trusts
// nothing from the peer: a frame it cannot read ends the connection with
// ErrBadFrame (FuzzReadFrame, FuzzConn, FuzzPipeChunk).
package workerconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// MaxFrame bounds one frame (a task spec with inline arguments, a
// result with inline values); larger values go through the object store.
const MaxFrame = 256 << 20

// frameChunk is how much of a frame's buffer is allocated before its bytes
// arrive: a larger frame's buffer grows (doubling) as they do, so a peer's
// length prefix alone cannot make the reader allocate MaxFrame bytes.
const frameChunk = 1 << 20

// ErrClosed is returned by calls on a closed connection.
var ErrClosed = errors.New("workerconn: connection closed")

// ErrBadFrame is matched by the error of a frame larger than MaxFrame and,
// with ErrClosed, by the error of a connection whose peer sent one or sent
// bytes that are not a frame.
var ErrBadFrame = errors.New("workerconn: bad frame")

// MaxAbandoned bounds the calls of one connection whose callers gave up
// while their late replies are still awaited (see CallLate).
const MaxAbandoned = 1 << 14

// Handler receives every frame that is not a reply, on the connection's
// reader goroutine: it must not block (hand slow work to a goroutine).
type Handler func(f *atollpb.Frame)

// Late receives the reply to a call whose caller gave up (see CallLate),
// on the connection's reader goroutine: it must not block.
type Late func(reply *atollpb.Frame)

// call is a request waiting for its reply: its caller waits on ch, or has
// given up and left late to receive it.
type call struct {
	ch   chan *atollpb.Frame
	late Late
}

// Conn is one end of a worker connection. It is safe for concurrent use.
type Conn struct {
	c       wire
	handler Handler

	// Writes are group-committed: a writer appends its frame to wbuf
	// and, unless another writer is flushing already, flushes wbuf
	// itself until it is empty — one write syscall per burst of frames,
	// whatever goroutines made them. A writer finding more than
	// maxPending bytes queued waits for the flusher (backpressure).
	wmu      sync.Mutex
	wcond    *sync.Cond
	wbuf     []byte
	spare    []byte
	flushing bool
	werr     error
	// writes counts write syscalls and frames counts frames written
	// (Stats).
	writes, frames atomic.Uint64

	nextID  atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]*call
	// abandoned counts the entries of pending whose caller gave up.
	abandoned int
	err       error
	done      chan struct{}
}

// New wraps the stream socket c and starts reading. Frames that are not
// replies go to h. It is Open(Socket(c), h).
func New(c net.Conn, h Handler) *Conn { return Open(Socket(c), h) }

// Open starts a connection over e and starts reading. Frames that are not
// replies go to h.
func Open(e Endpoint, h Handler) *Conn {
	conn := &Conn{c: e.wire(), handler: h, pending: map[uint64]*call{}, done: make(chan struct{})}
	conn.wcond = sync.NewCond(&conn.wmu)
	go conn.read()
	return conn
}

// An Endpoint is one end of a transport, not yet a Conn (Open makes it
// one): a stream socket (Socket) or an end of an in-memory pipe (Pipe).
type Endpoint interface{ wire() wire }

// wire is a transport as a Conn uses it.
type wire interface {
	// write hands over buf, whole frames; kept reports that the
	// transport keeps buf (the pipe hands it to the peer), so the Conn
	// must not reuse it.
	write(buf []byte) (kept bool, err error)
	// spare returns a buffer the peer is done with, if any, for the
	// next burst.
	spare() []byte
	// readFrames calls deliver with each frame that arrives, in order,
	// until the stream ends (io.EOF at a frame boundary) or fails.
	readFrames(deliver func(*atollpb.Frame)) error
	close() error
}

// Send writes a one-way frame.
func (c *Conn) Send(f *atollpb.Frame) error {
	f.Id = 0
	return c.write(f)
}

// SendAll writes one-way frames in one burst (one write syscall unless
// they pass the pending bound).
func (c *Conn) SendAll(fs ...*atollpb.Frame) error {
	for _, f := range fs {
		f.Id = 0
	}
	return c.write(fs...)
}

// Reply answers the request with id to.
func (c *Conn) Reply(to uint64, f *atollpb.Frame) error {
	f.Id, f.ReplyTo = 0, to
	return c.write(f)
}

// Call sends a request and waits for its reply, ctx, or the connection's
// end. A reply that arrives after the caller gave up is dropped.
func (c *Conn) Call(ctx context.Context, f *atollpb.Frame) (*atollpb.Frame, error) {
	return c.CallLate(ctx, f, nil)
}

// CallLate is Call for requests whose replies grant something the caller
// must give back (a pin, a block of memory): if ctx ends before the reply,
// the call is abandoned rather than forgotten, and its reply, when it
// arrives, goes to late (on the reader goroutine; it must not block). If
// the reply won the race against ctx, CallLate returns it. late is not
// called if the connection ends first (the peer then reclaims what it
// granted), nor when more than MaxAbandoned calls are abandoned at once
// (the call is forgotten, as by Call). A nil late makes it Call.
func (c *Conn) CallLate(ctx context.Context, f *atollpb.Frame, late Late) (*atollpb.Frame, error) {
	id := c.nextID.Add(1)
	pc := &call{ch: make(chan *atollpb.Frame, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = pc
	c.mu.Unlock()
	f.Id = id
	if err := c.write(f); err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case r := <-pc.ch:
		return r, nil
	case <-ctx.Done():
		if r, ok := c.abandon(id, pc, late); ok {
			return r, nil
		}
		return nil, ctx.Err()
	case <-c.done:
		c.forget(id)
		return nil, c.Err()
	}
}

// abandon hands the pending call id over to late. If the reader already
// took the call's reply, it returns that reply instead.
func (c *Conn) abandon(id uint64, pc *call, late Late) (*atollpb.Frame, bool) {
	c.mu.Lock()
	if _, waiting := c.pending[id]; !waiting {
		c.mu.Unlock()
		// Only the reader removes a call nobody abandoned: it is
		// delivering the reply (pc.ch is buffered).
		return <-pc.ch, true
	}
	if late == nil || c.abandoned >= MaxAbandoned || c.err != nil {
		delete(c.pending, id)
	} else {
		pc.late = late
		c.abandoned++
	}
	c.mu.Unlock()
	return nil, false
}

func (c *Conn) forget(id uint64) {
	c.mu.Lock()
	if pc := c.pending[id]; pc != nil && pc.late != nil {
		c.abandoned--
	}
	delete(c.pending, id)
	c.mu.Unlock()
}

// maxPending is how many bytes of frames may wait for the flusher before
// writers wait for it; keepBuffer the largest buffer kept for reuse.
const (
	maxPending = 4 << 20
	keepBuffer = 1 << 20
)

func (c *Conn) write(fs ...*atollpb.Frame) error {
	var one [1]int
	sizes := one[:0]
	if len(fs) > 1 {
		sizes = make([]int, 0, len(fs))
	}
	for _, f := range fs {
		n := proto.Size(f)
		if n > MaxFrame {
			return fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrBadFrame, n, MaxFrame)
		}
		sizes = append(sizes, n)
	}
	c.wmu.Lock()
	for c.werr == nil && c.flushing && len(c.wbuf) > maxPending {
		c.wcond.Wait()
	}
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return c.fail(err)
	}
	start := len(c.wbuf)
	for i, f := range fs {
		c.wbuf = binary.BigEndian.AppendUint32(c.wbuf, uint32(sizes[i]))
		b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(c.wbuf, f)
		if err != nil {
			c.wbuf = c.wbuf[:start]
			c.wmu.Unlock()
			return fmt.Errorf("workerconn: marshal: %w", err)
		}
		c.wbuf = b
	}
	c.frames.Add(uint64(len(fs)))
	if c.flushing {
		c.wmu.Unlock() // the flusher writes it with its burst
		return nil
	}
	c.flushing = true
	for len(c.wbuf) > 0 && c.werr == nil {
		buf := c.wbuf
		c.wbuf = c.spare[:0]
		c.spare = nil
		c.wmu.Unlock()
		kept, err := c.c.write(buf)
		c.writes.Add(1)
		var spare []byte
		if kept {
			spare = c.c.spare()
		}
		c.wmu.Lock()
		switch {
		case !kept && cap(buf) <= keepBuffer:
			c.spare = buf[:0]
		case kept && c.spare == nil:
			c.spare = spare
		}
		if err != nil && c.werr == nil {
			c.werr = err
		}
		c.wcond.Broadcast()
	}
	c.flushing = false
	err := c.werr
	c.wcond.Broadcast()
	c.wmu.Unlock()
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// Stats counts the frames a connection wrote and the write syscalls they
// took.
type Stats struct{ Frames, Writes uint64 }

// Stats reports the frames written so far and the write syscalls.
func (c *Conn) Stats() Stats { return Stats{Frames: c.frames.Load(), Writes: c.writes.Load()} }

func (c *Conn) read() {
	if err := c.c.readFrames(c.dispatch); err != nil {
		c.fail(err)
	}
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

// fail records the first error and closes the connection.
func (c *Conn) fail(err error) error {
	c.mu.Lock()
	first := c.err == nil
	if first {
		switch {
		case errors.Is(err, ErrClosed):
		case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe):
			err = ErrClosed
		default: // a reset, a broken pipe, a corrupt frame: the connection is gone all the same
			err = fmt.Errorf("%w: %w", ErrClosed, err)
		}
		c.err = err
		// Nobody waits for the replies to abandoned calls anymore.
		for id, pc := range c.pending {
			if pc.late != nil {
				delete(c.pending, id)
			}
		}
		c.abandoned = 0
	}
	err = c.err
	c.mu.Unlock()
	if first {
		_ = c.c.close()
		close(c.done)
		c.wmu.Lock()
		if c.werr == nil {
			c.werr = err
		}
		c.wbuf = nil
		c.wcond.Broadcast()
		c.wmu.Unlock()
	}
	return err
}

// Close closes the connection; pending calls fail with ErrClosed.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	return nil
}

// Done is closed when the connection ends (closed by either side).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err reports why the connection ended, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
