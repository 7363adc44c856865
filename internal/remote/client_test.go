package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/atoll-runtime/atoll/internal/errs"
)

func TestPullRoundTripSizes(t *testing.T) {
	src := newMemSource()
	srv := startServer(t, src)
	c := newTestClient(t)
	for i, size := range []int{0, 1, ChunkSize - 1, ChunkSize + 1, 64 << 20} {
		id := objID(uint32(i))
		want := pattern(size, byte(i))
		src.add(id, want)
		var got []byte
		n, err := c.Pull(context.Background(), srv.Addr(), id, bufAlloc(&got))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if n != uint64(size) || !bytes.Equal(got, want) {
			t.Fatalf("size %d: got n=%d len=%d, bytes equal=%v", size, n, len(got), bytes.Equal(got, want))
		}
	}
	if o, r := src.opens.Load(), src.releases.Load(); o != 5 || r != 5 {
		t.Fatalf("opens=%d releases=%d, want 5 and 5", o, r)
	}
}

func TestPullNotFoundKeepsConnection(t *testing.T) {
	src := newMemSource()
	srv := startServer(t, src)
	c := newTestClient(t)
	called := false
	_, err := c.Pull(context.Background(), srv.Addr(), objID(1), func(uint64) ([]byte, error) {
		called = true
		return nil, nil
	})
	if !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if called {
		t.Fatal("alloc called for a missing object")
	}
	id := objID(2)
	src.add(id, []byte("hello"))
	var got []byte
	if _, err := c.Pull(context.Background(), srv.Addr(), id, bufAlloc(&got)); err != nil || string(got) != "hello" {
		t.Fatalf("after not found: %q, %v", got, err)
	}
}

func TestPullDialFailureIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := newTestClient(t)
	_, err = c.Pull(context.Background(), addr, objID(1), bufAlloc(new([]byte)))
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

// fakePeer accepts one connection, reads one request, announces size
// bytes, sends the first half, signals halfSent and then runs after.
func fakePeer(t *testing.T, size int, after func(net.Conn)) (addr string, halfSent <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	half := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		var req [requestLen]byte
		if _, err := io.ReadFull(conn, req[:]); err != nil {
			return
		}
		hdr := encodeReply(statusOK, uint64(size))
		if _, err := conn.Write(hdr[:]); err != nil {
			return
		}
		if _, err := conn.Write(pattern(size/2, 0)); err != nil {
			return
		}
		close(half)
		after(conn)
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String(), half
}

func TestPullPeerClosesMidTransfer(t *testing.T) {
	addr, _ := fakePeer(t, 1<<20, func(c net.Conn) { _ = c.Close() })
	c := newTestClient(t)
	_, err := c.Pull(context.Background(), addr, objID(1), bufAlloc(new([]byte)))
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestPullCancelMidTransfer(t *testing.T) {
	stop := make(chan struct{})
	addr, half := fakePeer(t, 1<<20, func(c net.Conn) { <-stop })
	defer close(stop)
	c := newTestClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-half
		cancel()
	}()
	_, err := c.Pull(ctx, addr, objID(1), bufAlloc(new([]byte)))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestPullServerClosedMidTransfer(t *testing.T) {
	src := newMemSource()
	srv := startServer(t, src)
	id := objID(1)
	src.add(id, pattern(64<<20, 1)) // far larger than socket buffers
	c := newTestClient(t)
	_, err := c.Pull(context.Background(), srv.Addr(), id, func(size uint64) ([]byte, error) {
		// The server is blocked writing the body: close it under us.
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		return make([]byte, size), nil
	})
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if r := src.releases.Load(); r != 1 {
		t.Fatalf("releases = %d, want 1", r)
	}
}

func TestPullReusesPooledConnectionAfterServerRestartFails(t *testing.T) {
	src := newMemSource()
	srv := startServer(t, src)
	id := objID(1)
	src.add(id, []byte("x"))
	c := newTestClient(t)
	if _, err := c.Pull(context.Background(), srv.Addr(), id, bufAlloc(new([]byte))); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	_ = srv.Close() // the pooled connection is now dead
	_, err := c.Pull(context.Background(), addr, id, bufAlloc(new([]byte)))
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
