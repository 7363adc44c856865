package workerconn

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Socket is the transport of a stream socket: the socket pair between a
// raylet and a worker process. Frames are written as a 4-byte big-endian
// length and the frame's protobuf bytes; the reader reads 64 KiB at a
// time.
func Socket(c net.Conn) Endpoint { return socket{c: c, w: newRawWriter(c)} }

// socket is a stream socket and, when it has a descriptor, its raw
// writer (nil for net.Pipe in tests).
type socket struct {
	c net.Conn
	w *rawWriter
}

func (s socket) wire() wire { return s }

func (s socket) write(buf []byte) (bool, error) {
	if s.w == nil {
		_, err := s.c.Write(buf)
		return false, err
	}
	_, err := s.w.write(buf, true)
	return false, err
}

func (socket) spare() []byte { return nil }

func (s socket) close() error { return s.c.Close() }

func (s socket) reader() frameSource {
	return &socketReader{r: bufio.NewReaderSize(newRawReader(s.c), 64<<10)}
}

// socketReader reads frames from a socket through a 64 KiB buffer.
type socketReader struct {
	r       *bufio.Reader
	push    pushDecoder
	results resultDecoder
}

func (r *socketReader) next() (*atollpb.Frame, error) { return readBuffered(r.r, &r.push, &r.results) }
func (r *socketReader) more() bool                    { return r.r.Buffered() > 0 }

// large waits for the next frame's length and reports whether the frame
// is larger than the read buffer (read a part at a time by readFrame).
func (r *socketReader) large() (bool, error) {
	hdr, err := r.r.Peek(4)
	if err != nil {
		if len(hdr) > 0 && err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	return int(binary.BigEndian.Uint32(hdr))+4 > r.r.Size(), nil
}

// tryWrite writes what the socket takes now, without waiting (a socket
// without a descriptor, net.Pipe in tests, takes nothing this way).
func (s socket) tryWrite(buf []byte) (int, bool, error) {
	if s.w == nil {
		return 0, false, errWouldBlock
	}
	n, err := s.w.write(buf, false)
	return n, false, err
}

// readBuffered reads one frame from r, straight from r's buffer when the
// frame fits in it (no copy of its bytes but the one proto.Unmarshal
// makes of what it keeps), else as readFrame does.
func readBuffered(r *bufio.Reader, push *pushDecoder, results *resultDecoder) (*atollpb.Frame, error) {
	hdr, err := r.Peek(4)
	if err != nil {
		if len(hdr) > 0 && err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	if n+4 > r.Size() {
		return readFrame(r)
	}
	b, err := r.Peek(4 + n)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the header came, the frame did not
		}
		return nil, err
	}
	f, ok := results.decode(b[4:])
	if !ok {
		f, ok = push.decode(b[4:])
	}
	if !ok {
		f = &atollpb.Frame{}
		if err := proto.Unmarshal(b[4:], f); err != nil {
			return nil, fmt.Errorf("%w: %d bytes are not a frame: %v", ErrBadFrame, n, err)
		}
	}
	_, _ = r.Discard(4 + n)
	return f, nil
}

// readFrame reads one frame: a 4-byte big-endian length, then that many
// bytes of protobuf. It trusts nothing it reads: a length beyond MaxFrame
// or bytes that are not a Frame are ErrBadFrame, a stream that ends
// inside a frame io.ErrUnexpectedEOF, and one that ends before a frame
// io.EOF.
func readFrame(r io.Reader) (*atollpb.Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: peer sent a frame of %d bytes, more than %d", ErrBadFrame, n, MaxFrame)
	}
	buf := make([]byte, 0, min(n, frameChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), len(buf)))
		}
		m, err := io.ReadFull(r, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the header came, the frame did not
		}
		if err != nil {
			return nil, err
		}
	}
	f := &atollpb.Frame{}
	if err := proto.Unmarshal(buf, f); err != nil {
		return nil, fmt.Errorf("%w: %d bytes are not a frame: %v", ErrBadFrame, n, err)
	}
	return f, nil
}
