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
func Socket(c net.Conn) Endpoint { return socket{c} }

type socket struct{ c net.Conn }

func (s socket) wire() wire { return s }

func (s socket) write(buf []byte) (bool, error) {
	_, err := s.c.Write(buf)
	return false, err
}

func (socket) spare() []byte { return nil }

func (s socket) close() error { return s.c.Close() }

func (s socket) readFrames(deliver func(*atollpb.Frame)) error {
	r := bufio.NewReaderSize(s.c, 64<<10)
	for {
		f, err := readFrame(r)
		if err != nil {
			return err
		}
		deliver(f)
	}
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
