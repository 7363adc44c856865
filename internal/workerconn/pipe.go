package workerconn

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Pipe returns the two ends of an in-memory connection, for a worker that
// runs on goroutines of the raylet's process: Open each end to get its
// Conn. It carries the frames a socket would, with the same bounds, order
// and end-of-stream behaviour (a closed end's peer reads what was written
// before the close, then the stream ends; writes to a closed end fail),
// but no byte crosses the kernel: the burst of frames a writer marshals
// into its buffer is handed to the peer's reader as it is, the reader
// unmarshals each frame from it (the one copy: proto.Unmarshal copies
// what it keeps) and gives the buffer back to the writer for a later
// burst. A writer waits while more than 4 MiB of its frames are unread,
// as a socket's writer waits for the peer to read.
func Pipe() (a, b Endpoint) {
	ab, ba := newPipeQueue(), newPipeQueue()
	return &pipeEnd{in: ba, out: ab}, &pipeEnd{in: ab, out: ba}
}

// pipeQueue is one direction of a pipe: the bursts one end wrote and the
// other has not read yet.
type pipeQueue struct {
	mu   sync.Mutex
	cond sync.Cond
	// chunks are the bursts written, in order; queued their bytes.
	chunks [][]byte
	queued int
	// closed: the writing end closed (the reader reads what is queued,
	// then the stream ends); gone: the reading end closed (writes fail,
	// what is queued is dropped).
	closed, gone bool
	// free are buffers the reader is done with, for the writer's next
	// bursts (at most maxFree, each at most keepBuffer).
	free [][]byte
}

// maxFree bounds the buffers a pipe direction keeps for reuse.
const maxFree = 4

func newPipeQueue() *pipeQueue {
	q := &pipeQueue{}
	q.cond.L = &q.mu
	return q
}

type pipeEnd struct{ in, out *pipeQueue }

func (e *pipeEnd) wire() wire { return e }

func (e *pipeEnd) write(buf []byte) (bool, error) {
	q := e.out
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.gone && !q.closed && q.queued > maxPending {
		q.cond.Wait()
	}
	if q.gone || q.closed {
		return false, io.ErrClosedPipe
	}
	q.chunks = append(q.chunks, buf)
	q.queued += len(buf)
	q.cond.Broadcast()
	return true, nil
}

func (e *pipeEnd) spare() []byte {
	q := e.out
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.free); n > 0 {
		b := q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
		return b
	}
	return nil
}

func (e *pipeEnd) close() error {
	e.out.mu.Lock()
	e.out.closed = true
	e.out.cond.Broadcast()
	e.out.mu.Unlock()
	e.in.mu.Lock()
	e.in.gone = true
	e.in.chunks, e.in.queued, e.in.free = nil, 0, nil
	e.in.cond.Broadcast()
	e.in.mu.Unlock()
	return nil
}

// tryWrite is write, unless it would wait (more than maxPending unread).
func (e *pipeEnd) tryWrite(buf []byte) (int, bool, error) {
	q := e.out
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone || q.closed {
		return 0, false, io.ErrClosedPipe
	}
	if q.queued > maxPending {
		return 0, false, errWouldBlock
	}
	q.chunks = append(q.chunks, buf)
	q.queued += len(buf)
	q.cond.Broadcast()
	return len(buf), true, nil
}

func (e *pipeEnd) reader() frameSource { return &pipeReader{q: e.in} }

// pipeReader reads the frames of the bursts a pipe's writer handed over,
// giving each burst's buffer back once it read all of it.
type pipeReader struct {
	q     *pipeQueue
	taken [][]byte
	i     int    // taken[i] is being read
	rest  []byte // what is left of it
}

func (r *pipeReader) more() bool { return len(r.rest) > 0 || r.i+1 < len(r.taken) }

func (r *pipeReader) next() (*atollpb.Frame, error) {
	for len(r.rest) == 0 {
		if r.i+1 < len(r.taken) {
			r.i++
			r.rest = r.taken[r.i]
			continue
		}
		if err := r.refill(); err != nil {
			return nil, err
		}
	}
	f, rest, err := parseOne(r.rest)
	if err != nil {
		return nil, err
	}
	r.rest = rest
	return f, nil
}

// refill gives the bursts read back for reuse and waits for more.
func (r *pipeReader) refill() error {
	q := r.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, chunk := range r.taken {
		if !q.gone && cap(chunk) <= keepBuffer && len(q.free) < maxFree {
			q.free = append(q.free, chunk[:0])
		}
		r.taken[i] = nil
	}
	for len(q.chunks) == 0 && !q.closed && !q.gone {
		q.cond.Wait()
	}
	if q.gone {
		return io.ErrClosedPipe // this end closed
	}
	if len(q.chunks) == 0 {
		return io.EOF // the peer closed, and everything it wrote is read
	}
	r.taken, q.chunks = q.chunks, r.taken[:0]
	q.queued = 0
	q.cond.Broadcast()
	r.i, r.rest = 0, r.taken[0]
	return nil
}

// parseOne reads the first frame of a burst's rest.
func parseOne(chunk []byte) (*atollpb.Frame, []byte, error) {
	if len(chunk) < 4 {
		return nil, nil, fmt.Errorf("%w: %d bytes at the end of a burst, not a frame", ErrBadFrame, len(chunk))
	}
	n := binary.BigEndian.Uint32(chunk)
	if n > MaxFrame {
		return nil, nil, fmt.Errorf("%w: peer sent a frame of %d bytes, more than %d", ErrBadFrame, n, MaxFrame)
	}
	if uint64(n) > uint64(len(chunk)-4) {
		return nil, nil, fmt.Errorf("%w: a frame of %d bytes in a burst of %d", ErrBadFrame, n, len(chunk)-4)
	}
	f := &atollpb.Frame{}
	if err := proto.Unmarshal(chunk[4:4+n], f); err != nil {
		return nil, nil, fmt.Errorf("%w: %d bytes are not a frame: %v", ErrBadFrame, n, err)
	}
	return f, chunk[4+n:], nil
}

// parseChunk delivers the frames of one burst, which holds whole frames
// (a writer hands over whole frames only). It trusts the bytes no more
// than a socket's reader does: a length beyond MaxFrame or past the
// burst, or bytes that are not a Frame, are ErrBadFrame. The frames it
// delivers share no memory with chunk.
func parseChunk(chunk []byte, deliver func(*atollpb.Frame)) error {
	for len(chunk) > 0 {
		f, rest, err := parseOne(chunk)
		if err != nil {
			return err
		}
		deliver(f)
		chunk = rest
	}
	return nil
}
