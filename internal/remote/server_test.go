package remote

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/preauth"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

func listenWith(t *testing.T, src ObjectSource, opts ServerOptions) *Server {
	t.Helper()
	s, err := ListenWith("127.0.0.1:0", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// pullRaw sends one pull request on c and reads the reply's header.
func pullRaw(t *testing.T, c net.Conn, id [20]byte) (status byte, n uint64) {
	t.Helper()
	req := encodeRequest(id)
	if _, err := c.Write(req[:]); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, n, err := readReply(c)
	if err != nil {
		t.Fatal(err)
	}
	return status, n
}

// closedByServer waits until the server closes c (a read ends in an
// error), at most 10 s.
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<16)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("%s: the server kept the connection open", what)
			}
			return
		}
	}
}

// TestServerConnectionCap: past MaxConns, a connection is closed at once
// and counted; the ones within keep being served.
func TestServerConnectionCap(t *testing.T) {
	src := newMemSource()
	id := objID(1)
	src.add(id, []byte("hello"))
	s := listenWith(t, src, ServerOptions{MaxConns: 2})
	a, b := dial(t, s), dial(t, s)
	for _, c := range []net.Conn{a, b} {
		if st, n := pullRaw(t, c, id); st != statusOK || n != 5 {
			t.Fatalf("pull within the cap: status %d, %d bytes", st, n)
		}
		if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
			t.Fatal(err)
		}
	}
	closedByServer(t, dial(t, s), "a connection past the cap")
	if s.Refused() != 1 {
		t.Fatalf("refused %d connections, want 1", s.Refused())
	}
	if st, _ := pullRaw(t, a, id); st != statusOK {
		t.Fatalf("a connection within the cap after the refusal: status %d", st)
	}
}

// TestServerIdleTimeout: a connection that sends nothing is closed after
// IdleTimeout, and the client's pool copes (a pull on a pooled connection
// the server closed retries on a fresh one).
func TestServerIdleTimeout(t *testing.T) {
	src := newMemSource()
	id := objID(1)
	src.add(id, pattern(1000, 3))
	s := listenWith(t, src, ServerOptions{IdleTimeout: 100 * time.Millisecond})
	closedByServer(t, dial(t, s), "an idle connection")

	cl := newTestClient(t)
	var dst []byte
	for range 2 { // the second pull finds its pooled connection closed
		if _, err := cl.Pull(t.Context(), s.Addr(), id, bufAlloc(&dst)); err != nil {
			t.Fatalf("pull: %v", err)
		}
		if len(dst) != 1000 {
			t.Fatalf("pulled %d bytes", len(dst))
		}
		testutil.Eventually(t, "the server to close the pooled connection", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.conns) == 0
		})
	}
}

// TestServerStalledReader: a peer that asks for an object and stops
// reading loses its connection after WriteTimeout, and the object's pin
// is released.
func TestServerStalledReader(t *testing.T) {
	src := newMemSource()
	id := objID(1)
	src.add(id, make([]byte, 64<<20)) // far more than the socket buffers hold
	s := listenWith(t, src, ServerOptions{WriteTimeout: 200 * time.Millisecond})
	c := dial(t, s)
	req := encodeRequest(id)
	if _, err := c.Write(req[:]); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the stalled transfer's pin to be released", func() bool { return src.releases.Load() == 1 })
	// The pin is released as the request's handler returns; the connection
	// leaves the table a moment later, when its serve loop does.
	testutil.Eventually(t, "the stalled connection to be closed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) == 0
	})
	closedByServer(t, c, "the stalled connection")
}

func TestListenWithRejectsNegativeOptions(t *testing.T) {
	if _, err := ListenWith("127.0.0.1:0", newMemSource(), ServerOptions{MaxConns: -1}); err == nil {
		t.Fatal("negative MaxConns accepted")
	}
}

// TestIdleConnectionsClosed: 300 connections that never speak (as an
// attacker holding sockets open would) are all gone within the handshake
// deadline: those past the address's pending bound at once (its oldest
// closed for each new one), the others when it passes.
func TestIdleConnectionsClosed(t *testing.T) {
	s := listenWith(t, newMemSource(), ServerOptions{Key: keyOf(1), HandshakeTimeout: 300 * time.Millisecond})
	conns := make([]net.Conn, 300)
	for i := range conns {
		conns[i] = dial(t, s)
	}
	for i, c := range conns {
		closedByServer(t, c, fmt.Sprintf("idle connection %d", i))
	}
	testutil.Eventually(t, "every connection accounted for", func() bool {
		return s.Refused()+s.Unauthenticated() == 300
	})
	if s.Refused() != 300-preauth.DefaultMaxPendingPerAddr {
		t.Fatalf("%d refused past the pending bound, want %d", s.Refused(), 300-preauth.DefaultMaxPendingPerAddr)
	}
}

// silentAttack opens n connections to addr from eight loopback
// addresses other than the client's (127.0.0.2-9) that never say a word,
// each reopened as the server closes it, until the returned stop is
// called. An attacker sharing the real peer's address is not what the
// pending bounds protect against.
func silentAttack(tb testing.TB, addr string, n int) (stop func()) {
	done := make(chan struct{})
	var attackers sync.WaitGroup
	for i := range n {
		dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%8))}}
		attackers.Go(func() {
			buf := make([]byte, 64)
			for {
				select {
				case <-done:
					return
				default:
				}
				conn, err := dialer.Dial("tcp", addr)
				if err != nil {
					continue
				}
				go func() { <-done; _ = conn.Close() }()
				_, _ = conn.Read(buf) // until the server closes it
				_ = conn.Close()
			}
		})
	}
	return func() { close(done); attackers.Wait() }
}

// TestTransferPreauthSlots: 300 connections that never finish their
// handshake, reopened as the server closes them, do not keep a client
// holding the key out: at least 99 of 100 pulls succeed, a tenth of them
// on connections dialed through the attack. (BenchmarkPullUnderAttack
// measures their latency.)
func TestTransferPreauthSlots(t *testing.T) {
	src := newMemSource()
	id := objID(1)
	src.add(id, pattern(256<<10, 7))
	srv := listenWith(t, src, ServerOptions{Key: keyOf(1), HandshakeTimeout: time.Second})
	stop := silentAttack(t, srv.Addr(), 300)
	defer stop()
	testutil.Eventually(t, "the attack to fill the pending slots", func() bool { return srv.Refused() > 300 })

	var c *Client
	failed := 0
	for i := range 100 {
		if i%10 == 0 {
			c = clientWith(t, ClientConfig{Key: keyOf(1)})
		}
		var got []byte
		if _, err := c.Pull(context.Background(), srv.Addr(), id, bufAlloc(&got)); err != nil {
			failed++
			t.Logf("pull %d: %v", i, err)
		}
	}
	if failed > 1 {
		t.Errorf("%d of 100 pulls failed under the attack, want at most 1", failed)
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
