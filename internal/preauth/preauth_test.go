package preauth

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

var testProtocol = Protocol{Magic: [4]byte{'T', 'E', 'S', 'T'}, Version: 1, Name: "test"}

func keyOf(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// handshake runs both sides over a pipe and returns their results.
func handshake(t *testing.T, server, client Protocol, sk, ck []byte) (served bool, dialErr error) {
	t.Helper()
	s, c := net.Pipe()
	defer s.Close()
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		err := client.Dial(c, ck, "peer")
		_ = c.Close() // a refused client stops waiting for the server's MAC
		done <- err
	}()
	served, _ = server.Serve(s, sk, 5*time.Second)
	_ = s.Close()
	return served, <-done
}

func TestHandshake(t *testing.T) {
	other := Protocol{Magic: [4]byte{'O', 'T', 'H', 'R'}, Version: 1, Name: "other"}
	newer := testProtocol
	newer.Version = 2
	for _, tc := range []struct {
		name           string
		server, client Protocol
		sk, ck         []byte
		served         bool
		dialErr        error
	}{
		{"same key", testProtocol, testProtocol, keyOf(1), keyOf(1), true, nil},
		{"another key", testProtocol, testProtocol, keyOf(1), keyOf(2), false, errs.ErrUnauthenticated},
		{"server without the key", testProtocol, testProtocol, nil, keyOf(1), false, errs.ErrUnauthenticated},
		{"another protocol", other, testProtocol, keyOf(1), keyOf(1), false, errs.ErrUnauthenticated},
		{"another version", newer, testProtocol, keyOf(1), keyOf(1), false, errs.ErrUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served, err := handshake(t, tc.server, tc.client, tc.sk, tc.ck)
			if served != tc.served {
				t.Errorf("server passed the client: %v, want %v", served, tc.served)
			}
			if tc.dialErr == nil && err != nil || tc.dialErr != nil && !errors.Is(err, tc.dialErr) {
				t.Errorf("client: %v, want %v", err, tc.dialErr)
			}
		})
	}
}

// TestServeReadsNoMoreThanTheReply: a peer sending megabytes before the
// proof gets them read no further than the reply's length.
func TestServeReadsNoMoreThanTheReply(t *testing.T) {
	s, c := net.Pipe()
	defer c.Close()
	counted := &countingConn{Conn: s}
	go func() {
		_, _ = io.Copy(io.Discard, c) // the hello
	}()
	go func() { _, _ = c.Write(make([]byte, 8<<20)) }()
	ok, _ := testProtocol.Serve(counted, keyOf(1), time.Second)
	_ = s.Close()
	if ok {
		t.Fatal("a peer sending zeros passed")
	}
	if counted.read > ReplyLen {
		t.Fatalf("the server read %d bytes before refusing, want at most %d", counted.read, ReplyLen)
	}
}

type countingConn struct {
	net.Conn
	read int
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read += n
	return n, err
}

// fakeConn is a connection with a remote address and a close flag: the
// gate's bookkeeping needs nothing else.
type fakeConn struct {
	net.Conn
	addr   net.Addr
	closed bool
	data   []byte
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.addr }
func (c *fakeConn) Close() error         { c.closed = true; return nil }
func (c *fakeConn) Read(b []byte) (int, error) {
	n := copy(b, c.data)
	c.data = c.data[n:]
	return n, nil
}

func conn(host string, port int) *fakeConn {
	return &fakeConn{addr: &net.TCPAddr{IP: net.ParseIP(host), Port: port}}
}

// TestGateBounds scripts arrivals and checks which connection each bound
// closes: the newcomer from an address at its bound or holding its
// share, else the oldest silent one of the biggest holder.
func TestGateBounds(t *testing.T) {
	g, err := NewGate(Limits{MaxPending: 4, MaxPendingPerAddr: 2})
	if err != nil {
		t.Fatal(err)
	}
	admit := func(c *fakeConn, want Verdict) net.Conn {
		t.Helper()
		w, v := g.Admit(c)
		if v != want {
			t.Fatalf("Admit(%v) = %v, want %v", c.addr, v, want)
		}
		if closed := v == Refused; c.closed != closed {
			t.Fatalf("Admit(%v): closed %v, want %v", c.addr, c.closed, closed)
		}
		return w
	}
	a1, a2, a3 := conn("10.0.0.1", 1), conn("10.0.0.1", 2), conn("10.0.0.1", 3)
	w1 := admit(a1, Admitted)
	admit(a2, Admitted)
	admit(a3, Refused) // 10.0.0.1 is at its bound
	if a1.closed || a2.closed {
		t.Fatal("a refused newcomer closed a pending connection")
	}

	// a1's peer answered the hello.
	a1.data = []byte{1}
	if _, err := w1.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	b1, b2 := conn("10.0.0.2", 1), conn("10.0.0.2", 2)
	admit(b1, Admitted)
	admit(b2, Admitted) // the gate is full: 2 + 2
	// A new address evicts from the biggest holder (a tie: the lower
	// address), its oldest silent connection: a2, not a1.
	c1, c2 := conn("10.0.0.3", 1), conn("10.0.0.3", 2)
	admit(c1, Admitted)
	if !a2.closed || a1.closed {
		t.Fatalf("closed a1=%v a2=%v, want a2 (the silent one of the biggest holder)", a1.closed, a2.closed)
	}
	if g.Pass(a2) {
		t.Fatal("an evicted connection passed")
	}
	admit(c2, Refused) // 10.0.0.3 holds 1, the biggest 2: its share
	if g.Refused() != 3 || g.Pending() != 4 {
		t.Fatalf("refused %d, pending %d; want 3 and 4", g.Refused(), g.Pending())
	}
	if !g.Pass(a1) || g.Drop(a1) {
		t.Fatal("a1 should pass once and then be gone")
	}
	if !g.Drop(b1) {
		t.Fatal("b1 failed its handshake while pending: Drop should report it")
	}
	g.Close()
	if !b2.closed || !c1.closed {
		t.Fatal("Close left pending connections open")
	}
	if _, v := g.Admit(conn("10.0.0.4", 1)); v != Closed {
		t.Fatalf("a closed gate: %v", v)
	}
	if _, err := NewGate(Limits{MaxPending: -1}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("negative limits: %v", err)
	}
}

// FuzzServe plays any client bytes against the server's side of the
// handshake: it must refuse (never pass) a client that does not prove
// the key, and never panic or hang.
func FuzzServe(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, ReplyLen))
	f.Add(make([]byte, ReplyLen+100))
	f.Fuzz(func(t *testing.T, req []byte) {
		server, client := net.Pipe()
		defer server.Close()
		go func() {
			defer client.Close()
			go func() { _, _ = io.Copy(io.Discard, client) }()
			_, _ = client.Write(req)
		}()
		if ok, _ := testProtocol.Serve(server, keyOf(9), time.Second); ok {
			t.Fatalf("the server passed a client that sent %x", req)
		}
	})
}

// FuzzDial plays any server bytes against the client's side: it must
// fail (never pass) a server that does not prove the key.
func FuzzDial(f *testing.F) {
	f.Add([]byte("TEST\x01"))
	f.Add(append([]byte("TEST\x01"), make([]byte, nonceLen+macLen)...))
	f.Fuzz(func(t *testing.T, hello []byte) {
		server, client := net.Pipe()
		defer client.Close()
		go func() {
			defer server.Close()
			go func() { _, _ = io.Copy(io.Discard, server) }()
			_, _ = server.Write(hello)
		}()
		_ = client.SetDeadline(time.Now().Add(time.Second))
		if err := testProtocol.Dial(client, keyOf(9), "fuzz"); err == nil {
			t.Fatalf("the client passed a server that sent %x", hello)
		}
	})
}
