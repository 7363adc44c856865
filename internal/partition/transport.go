package partition

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Transport wraps a memberlist transport (memberlist.NetTransport, bound
// by the caller) so that the switch's cuts apply to gossip: packets are
// dropped in the cut's direction, stream connections refused or closed.
type Transport struct {
	inner   memberlist.NodeAwareTransport
	s       *Switch
	packets chan *memberlist.Packet
	streams chan net.Conn
	// stopping closes when Shutdown starts: the pumps then drain the
	// inner transport without forwarding (its listeners block on their
	// unbuffered channels, and its Shutdown waits for them); done closes
	// once the inner transport is down, and the pumps return.
	stopping chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

var _ memberlist.NodeAwareTransport = (*Transport)(nil)

// Transport wraps inner; memberlist must be given the result as its
// Config.Transport.
func (s *Switch) Transport(inner memberlist.NodeAwareTransport) *Transport {
	t := &Transport{inner: inner, s: s, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn),
		stopping: make(chan struct{}), done: make(chan struct{})}
	t.wg.Add(2)
	go t.pumpPackets()
	go t.pumpStreams()
	return t
}

func (t *Transport) pumpPackets() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case p := <-t.inner.PacketCh():
			if t.s.blocks(true) {
				continue // lost on the way in
			}
			select {
			case t.packets <- p:
			case <-t.stopping: // dropped
			case <-t.done:
				return
			}
		}
	}
}

func (t *Transport) pumpStreams() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case c := <-t.inner.StreamCh():
			tc, err := t.s.Admit(c)
			if err != nil {
				continue // Admit closed it
			}
			select {
			case t.streams <- tc:
			case <-t.stopping:
				_ = tc.Close()
			case <-t.done:
				_ = tc.Close()
				return
			}
		}
	}
}

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *Transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

// WriteTo implements memberlist.Transport: a packet sent while the node
// is cut off outbound is lost, silently, as on a network.
func (t *Transport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.s.blocks(false) {
		return time.Now(), nil
	}
	return t.inner.WriteTo(b, addr)
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *Transport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	if t.s.blocks(false) {
		return time.Now(), nil
	}
	return t.inner.WriteToAddress(b, addr)
}

// PacketCh implements memberlist.Transport.
func (t *Transport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// DialTimeout implements memberlist.Transport.
func (t *Transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.s.cut() {
		return nil, ErrCut
	}
	c, err := t.inner.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return t.s.track(c)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *Transport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.s.cut() {
		return nil, ErrCut
	}
	c, err := t.inner.DialAddressTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return t.s.track(c)
}

// StreamCh implements memberlist.Transport.
func (t *Transport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown implements memberlist.Transport: it shuts the inner transport
// down while the pumps drain it, then stops the pumps.
func (t *Transport) Shutdown() error {
	var err error
	t.once.Do(func() {
		close(t.stopping)
		err = t.inner.Shutdown()
		close(t.done)
		t.wg.Wait()
	})
	return err
}
