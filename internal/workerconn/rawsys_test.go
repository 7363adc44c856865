package workerconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

// A raw reader waits in the netpoller for data, reads what came, keeps
// the connection's deadline, and reports the peer's close as io.EOF.
func TestRawReaderWaitsReadsAndEnds(t *testing.T) {
	a, b := testutil.SocketPair(t)
	r := newRawReader(a)
	if _, ok := r.(*rawReader); !ok {
		t.Fatalf("a socket's reader is %T, want rawReader", r)
	}
	go func() { _, _ = b.Write([]byte("hello")) }() // the read may wait for it
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read %q, %v; want hello", buf[:n], err)
	}
	if err := a.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if err := a.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed: %d, %v; want 0, io.EOF", n, err)
	}
	if p := descriptorless(t); newRawReader(p) != io.Reader(p) {
		t.Fatal("a connection without a descriptor is not read as it is")
	}
}

// A raw reader's read of what is there allocates nothing: it runs once a
// frame or burst on every worker connection.
func TestRawReaderReadsWithoutAllocating(t *testing.T) {
	a, b := testutil.SocketPair(t)
	r := newRawReader(a)
	const runs = 100
	msg := []byte("hello")
	if _, err := b.Write(bytes.Repeat(msg, runs+1)); err != nil { // AllocsPerRun runs once more first
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	allocs := testing.AllocsPerRun(runs, func() {
		if n, err := r.Read(buf); n != len(msg) || err != nil {
			t.Fatalf("read %d, %v; want %d bytes", n, err, len(msg))
		}
	})
	if allocs != 0 {
		t.Fatalf("a read allocates %.1f times, want 0", allocs)
	}
}

// A tryWrite on a socket whose peer reads nothing writes what fits, then
// would block.
func TestTryWriteStopsWhenFull(t *testing.T) {
	a, _ := testutil.SocketPair(t)
	s := Socket(a).(socket)
	big := make([]byte, 8<<20)
	n, _, err := s.tryWrite(big)
	if !errors.Is(err, errWouldBlock) || n <= 0 || n >= len(big) {
		t.Fatalf("tryWrite of 8 MiB to a full socket: %d bytes, %v; want some, then errWouldBlock", n, err)
	}
}

// A socket's write waits for room: 8 MiB to a peer that reads it a
// piece at a time arrive whole and in order. A write allocates nothing,
// and one to a peer gone fails.
func TestSocketWriteWaitsForRoom(t *testing.T) {
	a, b := testutil.SocketPair(t)
	s := Socket(a).(socket)
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 64<<10)
		for len(all) < len(big) {
			n, err := b.Read(buf)
			if err != nil {
				break
			}
			all = append(all, buf[:n]...)
		}
		got <- all
	}()
	if _, err := s.write(big); err != nil {
		t.Fatalf("write of 8 MiB: %v", err)
	}
	if all := <-got; !bytes.Equal(all, big) {
		t.Fatalf("the peer read %d bytes, not the %d written", len(all), len(big))
	}
	small := []byte("ping")
	var sink [4]byte
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.write(small); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(b, sink[:]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a write and its read allocate %.1f times, want 0", allocs)
	}
	b.Close()
	var err error
	for range 3 { // the first write after the close may still be taken
		if _, err = s.write(small); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("writes to a closed peer succeed")
	}
}

// descriptorless is one end of net.Pipe, which has no descriptor.
func descriptorless(t *testing.T) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a
}
