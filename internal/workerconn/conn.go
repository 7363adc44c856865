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
// Writers either wait (Send, SendAll, Reply, Call: the writer that finds
// nobody flushing writes the buffer itself; past 4 MiB queued writers
// wait) or do not (Queue, Encode without wait: the frames are appended
// and the writer flushing already, or else the connection's flusher
// goroutine, writes them): a connection's reader, which must never wait
// on its peer, queues. Encode appends frames an Encoder marshals straight
// into the buffer (no Frame value needed). The reader calls the
// WithBurstEnd hook after the last frame of each burst it read, so that
// what a burst of frames produced can leave in one message or one write.
//
// A socket connection whose user says nothing is expected from the peer
// (SetQuiet) reads lazily: its reader pauses, and a goroutine waiting for
// a frame it expects reads it itself (Borrow), with no hand-off from the
// reader (lazy.go).
//
// Both carry the same frames with the same bounds and the same ordering,
// so the protocol above them cannot tell them apart. The reader trusts
// nothing from the peer: a frame it cannot read ends the connection with
// ErrBadFrame (FuzzReadFrame, FuzzConn, FuzzPipeChunk).
package workerconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

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
	c        wire
	handler  Handler
	burstEnd func()
	// src is the stream's frames; rstate is the reader's generation
	// (high bits) and phase (low bit: dispatching a frame), so that a
	// reader whose handler runs long can be replaced (Handoff).
	src    frameSource
	rstate atomic.Uint64
	// yield is the reader state of a handler that runs user code on the
	// reader and may be replaced (Yielding), zero otherwise.
	yield atomic.Uint64
	// quiet, rmode, resume and pauseTimer are lazy reading's (lazy.go).
	quiet      atomic.Pointer[func() bool]
	rmode      atomic.Int32
	resume     chan struct{}
	pauseTimer *time.Timer
	borrowMu   sync.Mutex
	borrowing  bool

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
	// kick wakes the connection's flusher goroutine (started by the
	// first Queue): it flushes for writers that must not wait (Queue).
	kick     chan struct{}
	kickOnce sync.Once
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
func Open(e Endpoint, h Handler, opts ...Option) *Conn {
	conn := &Conn{c: e.wire(), handler: h, pending: map[uint64]*call{}, done: make(chan struct{}), resume: make(chan struct{}, 1)}
	conn.wcond = sync.NewCond(&conn.wmu)
	for _, o := range opts {
		o(conn)
	}
	conn.src = conn.c.reader()
	go conn.read(0)
	return conn
}

// Option configures a Conn (Open).
type Option func(*Conn)

// WithBurstEnd calls f on the reader goroutine after the last frame of
// each burst it read, when no more bytes are buffered and the reader is
// about to wait for the peer: a point to flush what the frames of the
// burst produced (one message or one write per burst instead of one per
// frame). It must not block.
func WithBurstEnd(f func()) Option { return func(c *Conn) { c.burstEnd = f } }

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
	// tryWrite writes what of buf it can without waiting for the peer
	// (n bytes, or all of buf when kept: the transport took it) and
	// returns errWouldBlock if the peer is not reading.
	tryWrite(buf []byte) (n int, kept bool, err error)
	// reader returns the stream's frames, one reader per wire.
	reader() frameSource
	close() error
}

// frameSource reads a stream's frames. next returns the next frame,
// waiting for it, until the stream ends (io.EOF at a frame boundary) or
// fails; more reports whether another frame can be read without waiting
// (a burst is not over).
type frameSource interface {
	next() (*atollpb.Frame, error)
	more() bool
}

// errWouldBlock: a write would wait for the peer.
var errWouldBlock = errors.New("workerconn: the write would wait")

// Send writes a one-way frame.
func (c *Conn) Send(f *atollpb.Frame) error {
	f.Id = 0
	return c.write(true, f)
}

// SendAll writes one-way frames in one burst (one write syscall unless
// they pass the pending bound).
func (c *Conn) SendAll(fs ...*atollpb.Frame) error {
	for _, f := range fs {
		f.Id = 0
	}
	return c.write(true, fs...)
}

// Queue writes one-way frames without waiting for the peer: they are
// appended to the connection's buffer, and the writer flushing already,
// or else the connection's flusher goroutine, writes them (with whatever
// else is queued by then: one write for a burst). For goroutines that
// must never wait on the peer, such as a connection's reader (two readers
// each waiting for its peer to read would wait forever), and for writers
// that would rather batch than pay a write each. Unlike Send it does not
// wait past the pending bound: its callers bound what they queue.
func (c *Conn) Queue(fs ...*atollpb.Frame) error {
	for _, f := range fs {
		f.Id = 0
	}
	return c.write(false, fs...)
}

// Defer appends one-way frames to the buffer without writing them: the
// caller sees them written later (TryFlush, Flush, or the next write of
// any kind). A connection's reader defers what a burst of frames makes
// and flushes at the burst's end (WithBurstEnd).
func (c *Conn) Defer(fs ...*atollpb.Frame) error {
	for _, f := range fs {
		f.Id = 0
	}
	var small [8]frameSize
	sizes, err := sizeFrames(fs, small[:0])
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if c.wbuf, err = appendFrames(c.wbuf, fs, sizes); err != nil {
		return err
	}
	c.frames.Add(uint64(len(fs)))
	return nil
}

// DeferEncoded is Defer for the frames e appends (a push encoder's).
func (c *Conn) DeferEncoded(e Encoder) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	n := len(c.wbuf)
	out, err := e.AppendFrames(c.wbuf)
	if err != nil {
		c.wbuf = out[:n]
		return err
	}
	c.wbuf = out
	c.frames.Add(uint64(countFrames(out[n:])))
	return nil
}

// TryFlush writes what the buffer holds without waiting for the peer: as
// much as the transport takes at once, the rest by the flusher goroutine.
// Nothing to do if a writer is flushing already (it writes it).
func (c *Conn) TryFlush() {
	c.wmu.Lock()
	if c.flushing || len(c.wbuf) == 0 || c.werr != nil {
		c.wmu.Unlock()
		return
	}
	c.flushing = true
	buf := c.wbuf
	c.wbuf = c.spare[:0]
	c.spare = nil
	c.wmu.Unlock()
	n, kept, err := c.c.tryWrite(buf)
	if n > 0 {
		c.writes.Add(1)
	}
	var spare []byte
	if kept {
		spare = c.c.spare()
	}
	c.wmu.Lock()
	if err != nil && err != errWouldBlock && c.werr == nil {
		c.werr = err
	}
	rest := buf[n:]
	switch {
	case len(rest) > 0:
		// Before what was appended meanwhile, in order.
		c.wbuf = append(rest, c.wbuf...)
	case !kept && cap(buf) <= keepBuffer && c.spare == nil:
		c.spare = buf[:0]
	case kept && c.spare == nil:
		c.spare = spare
	}
	if c.werr != nil || len(c.wbuf) == 0 {
		c.flushing = false
		c.wcond.Broadcast()
		err := c.werr
		c.wmu.Unlock()
		if err != nil {
			c.fail(err)
		}
		return
	}
	c.wmu.Unlock()
	c.kickFlusher() // flushing stays set: the flusher writes the rest
}

// Flush writes what the buffer holds, waiting for the peer as Send does;
// nothing to do if a writer is flushing already (it writes it).
func (c *Conn) Flush() error {
	c.wmu.Lock()
	if c.flushing || len(c.wbuf) == 0 || c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.flushing = true
	err := c.flushLocked()
	c.wmu.Unlock()
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// Encoder appends whole frames, each a 4-byte big-endian length and the
// frame's protobuf bytes (AppendFrame), to buf and returns it.
type Encoder interface {
	AppendFrames(buf []byte) ([]byte, error)
}

// AppendFrame appends f as a connection carries it: its length, then its
// bytes.
func AppendFrame(buf []byte, f *atollpb.Frame) ([]byte, error) {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, f)
	if err != nil {
		return buf[:start], err
	}
	return PatchLength(buf, start)
}

// PatchLength sets the length of the frame whose 4-byte prefix starts at
// start and runs to the end of buf, checking it against MaxFrame.
func PatchLength(buf []byte, start int) ([]byte, error) {
	n := len(buf) - start - 4
	if n > MaxFrame {
		return buf[:start], fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrBadFrame, n, MaxFrame)
	}
	binary.BigEndian.PutUint32(buf[start:], uint32(n))
	return buf, nil
}

// Encode writes the frames e appends: with wait, as Send does (waiting
// past the pending bound); without, as Queue does. The frames are
// one-way (their ids are e's to set: zero). It does not allocate
// beyond what e does and the buffer's growth.
func (c *Conn) Encode(e Encoder, wait bool) error {
	return c.appendAndFlush(wait, func(buf []byte) ([]byte, int, error) {
		n := len(buf)
		out, err := e.AppendFrames(buf)
		if err != nil {
			return out[:n], 0, err
		}
		return out, countFrames(out[n:]), nil
	})
}

// countFrames counts the length-prefixed frames in b (whole frames).
func countFrames(b []byte) int {
	n := 0
	for len(b) >= 4 {
		l := int(binary.BigEndian.Uint32(b))
		if l > len(b)-4 {
			break
		}
		b = b[4+l:]
		n++
	}
	return n
}

// maxPending is how many bytes of frames may wait for the flusher before
// writers wait for it; keepBuffer the largest buffer kept for reuse.
const (
	maxPending = 4 << 20
	keepBuffer = 1 << 20
)

func (c *Conn) write(wait bool, fs ...*atollpb.Frame) error {
	var small [8]frameSize
	sizes, err := sizeFrames(fs, small[:0])
	if err != nil {
		return err
	}
	return c.appendAndFlush(wait, func(buf []byte) ([]byte, int, error) {
		buf, err := appendFrames(buf, fs, sizes)
		return buf, len(fs), err
	})
}

// frameSize is a frame's encoded size, and whether appendResultFrame
// encodes it (a task result of the common shape) rather than
// proto.Marshal.
type frameSize struct {
	n      int
	result bool
}

// sizeFrames appends the sizes of fs to sizes, checking each against
// MaxFrame.
func sizeFrames(fs []*atollpb.Frame, sizes []frameSize) ([]frameSize, error) {
	for _, f := range fs {
		s := frameSize{n: resultFrameSize(f), result: true}
		if s.n < 0 {
			s = frameSize{n: proto.Size(f)}
		}
		if s.n > MaxFrame {
			return nil, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrBadFrame, s.n, MaxFrame)
		}
		sizes = append(sizes, s)
	}
	return sizes, nil
}

// appendFrames appends fs, each its length and its bytes, to buf (which
// it returns as it was on an error).
func appendFrames(buf []byte, fs []*atollpb.Frame, sizes []frameSize) ([]byte, error) {
	start := len(buf)
	for i, f := range fs {
		buf = binary.BigEndian.AppendUint32(buf, uint32(sizes[i].n))
		if sizes[i].result {
			buf = appendResultFrame(buf, f)
			continue
		}
		b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, f)
		if err != nil {
			return buf[:start], fmt.Errorf("workerconn: marshal: %w", err)
		}
		buf = b
	}
	return buf, nil
}

// appendAndFlush appends frames to the write buffer with fill (which
// returns the buffer and how many frames it appended) and sees them
// written: by the writer flushing already, by this goroutine (wait), or
// by the flusher goroutine (no wait).
func (c *Conn) appendAndFlush(wait bool, fill func(buf []byte) ([]byte, int, error)) error {
	c.wmu.Lock()
	for wait && c.werr == nil && c.flushing && len(c.wbuf) > maxPending {
		c.wcond.Wait()
	}
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return c.fail(err)
	}
	buf, n, err := fill(c.wbuf)
	c.wbuf = buf
	if err != nil {
		c.wmu.Unlock()
		return err
	}
	c.frames.Add(uint64(n))
	if c.flushing {
		c.wmu.Unlock() // the flusher writes it with its burst
		return nil
	}
	c.flushing = true
	if !wait {
		c.wmu.Unlock()
		c.kickFlusher()
		return nil
	}
	err = c.flushLocked()
	c.wmu.Unlock()
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// flushLocked writes the buffer until it is empty; c.wmu is held (and
// released during each write) and c.flushing was set by the caller,
// which it clears. It returns the write error, if any.
func (c *Conn) flushLocked() error {
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
	c.wcond.Broadcast()
	return c.werr
}

// kickFlusher has the flusher goroutine flush the buffer (c.flushing is
// set for it).
func (c *Conn) kickFlusher() {
	c.kickOnce.Do(func() {
		c.kick = make(chan struct{}, 1)
		go c.flusher()
	})
	select {
	case c.kick <- struct{}{}:
	default: // a kick is pending already
	}
}

// flusher writes the buffer for Queue's writers until the connection
// ends.
func (c *Conn) flusher() {
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		c.wmu.Lock()
		if !c.flushing { // set by the kicker; a failed connection cleared it
			c.wmu.Unlock()
			continue
		}
		err := c.flushLocked()
		c.wmu.Unlock()
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// Stats counts the frames a connection wrote and the write syscalls they
// took.
type Stats struct{ Frames, Writes uint64 }

// Stats reports the frames written so far and the write syscalls.
func (c *Conn) Stats() Stats { return Stats{Frames: c.frames.Load(), Writes: c.writes.Load()} }

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
