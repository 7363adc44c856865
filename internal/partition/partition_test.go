package partition

import (
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func newTransport(t *testing.T, s *Switch) (*Transport, string) {
	t.Helper()
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, Logger: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	return s.Transport(nt), net.JoinHostPort("127.0.0.1", itoa(nt.GetAutoBindPort()))
}

func itoa(n int) string { return (&net.TCPAddr{Port: n}).String()[1:] }

// A packet the inner transport received while nobody reads the wrapper
// (memberlist stopping) must not keep Shutdown waiting: the inner
// transport's listener blocks on its unbuffered channel until read.
func TestShutdownWithUnreadPackets(t *testing.T) {
	tr, addr := newTransport(t, New(nil))
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- tr.Shutdown() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown blocked on packets nobody read")
	}
}

// A cut drops packets in its direction and refuses and closes TCP; a
// heal lets them through again.
func TestCutAndHeal(t *testing.T) {
	var changes []bool
	s := New(func(cut bool, _ Direction, _ time.Duration) { changes = append(changes, cut) })
	tr, addr := newTransport(t, s)
	defer tr.Shutdown()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	open, err := s.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	send := func() {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte("x"))
	}
	if err := s.Cut(Inbound, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := open.Write([]byte("x")); err == nil {
		t.Error("a connection open before the cut still writes")
	}
	if _, err := s.Dial("tcp", ln.Addr().String()); err != ErrCut {
		t.Errorf("dial while cut: %v, want ErrCut", err)
	}
	if _, err := tr.WriteTo([]byte("x"), addr); err != nil {
		t.Errorf("an outbound packet under an inbound cut: %v", err)
	}
	send()
	select {
	case <-tr.PacketCh():
		t.Error("a packet came in through an inbound cut")
	case <-time.After(200 * time.Millisecond): // a packet delivered at all arrives within microseconds
	}
	s.Heal()
	send()
	select {
	case <-tr.PacketCh():
	case <-time.After(10 * time.Second):
		t.Fatal("no packet after the heal")
	}
	c, err := s.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial after the heal: %v", err)
	}
	c.Close()
	if len(changes) != 2 || !changes[0] || changes[1] {
		t.Errorf("changes %v, want [true false]", changes)
	}
	if dir, _ := s.State(); dir != 0 {
		t.Errorf("state %v after the heal", dir)
	}
}
