package membership

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/preauth"
)

// Node is one live member in a Members snapshot.
type Node struct {
	ID   ids.NodeID
	Addr string // gossip address, host:port
	Meta []byte
}

// Member is this node's membership in the gossip cluster. Its methods are
// safe for concurrent use.
type Member struct {
	cfg  Config
	list *memberlist.Memberlist
	del  *delegates

	mu       sync.Mutex // guards meta, leaving, shutdown; never held across I/O
	meta     []byte     // Config.Meta, as last set by UpdateMeta
	leaving  bool
	shutdown bool
}

// ErrShutdown is returned by operations on a Member after Shutdown.
var ErrShutdown = errors.New("membership: member is shut down")

// Start validates cfg, binds the gossip port and starts memberlist. The new
// member knows only itself until Join.
func Start(cfg Config) (*Member, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	d := &delegates{self: cfg.NodeID.String(), log: cfg.Logger, meta: encodeMeta(0, cfg.Meta)}
	if cfg.Events != nil {
		sys, pid := cfg.System, cfg.Events
		// Root.Send to a local PID enqueues in the actor's mailbox; it may
		// block only for a bounded mailbox, which is why it runs here, on
		// the sink's goroutine, and not in memberlist's callback.
		d.addSink(newSink(func(e Event, _ <-chan struct{}) bool {
			sys.Root.Send(pid, e)
			return true
		}))
	}
	mc := cfg.memberlistConfig(d, d)
	if cfg.Partition != nil || len(cfg.SecretKey) > 0 {
		if err := bindTransport(mc, cfg); err != nil {
			for _, s := range d.takeSinks() {
				s.close()
			}
			return nil, err
		}
	}
	list, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			_ = mc.Transport.Shutdown()
		}
		for _, s := range d.takeSinks() {
			s.close()
		}
		return nil, fmt.Errorf("membership: start: %w", err)
	}
	return &Member{cfg: cfg, list: list, del: d, meta: cfg.Meta}, nil
}

// ID returns this node's id.
func (m *Member) ID() ids.NodeID { return m.cfg.NodeID }

// Addr returns the address peers use to reach this member (host:port), the
// value to pass to Join on other nodes.
func (m *Member) Addr() string {
	n := m.list.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// Join contacts the given members (host:port) and merges state with them. It
// returns how many were contacted successfully; the error is non-nil only if
// none was.
func (m *Member) Join(addrs []string) (int, error) {
	if m.isShutdown() {
		return 0, ErrShutdown
	}
	n, err := m.list.Join(addrs)
	if err != nil {
		return n, fmt.Errorf("membership: join: %w", err)
	}
	return n, nil
}

// Members returns a snapshot of the live members, this node included.
func (m *Member) Members() []Node {
	m.mu.Lock()
	self := Node{ID: m.cfg.NodeID, Addr: m.Addr(), Meta: clone(m.meta)}
	m.mu.Unlock()
	return append([]Node{self}, m.del.livePeers()...)
}

// UpdateMeta replaces this node's metadata and gossips it (others see
// NodeUpdated), waiting up to timeout for the update to be sent.
func (m *Member) UpdateMeta(meta []byte, timeout time.Duration) error {
	if len(meta) > MaxMetaSize {
		return fmt.Errorf("membership: meta is %d bytes, limit %d", len(meta), MaxMetaSize)
	}
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		return ErrShutdown
	}
	m.meta = clone(meta)
	m.del.setMeta(encodeMeta(m.flagsLocked(), m.meta))
	m.mu.Unlock()
	return m.list.UpdateNode(timeout)
}

func (m *Member) flagsLocked() byte {
	if m.leaving {
		return flagLeaving
	}
	return 0
}

// Leave announces a graceful departure and waits up to timeout for it to
// propagate: first the leaving flag in the metadata (so that the others
// report NodeLeft{Dead: false}), then memberlist's leave message. Call
// Shutdown afterwards.
func (m *Member) Leave(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		return ErrShutdown
	}
	m.leaving = true
	m.del.setMeta(encodeMeta(m.flagsLocked(), m.meta))
	m.mu.Unlock()
	// Spend at most half of the time on the flag; a timeout here is not
	// fatal (the others may then report the leave as a failure).
	_ = m.list.UpdateNode(timeout / 2)
	if err := m.list.Leave(time.Until(deadline)); err != nil {
		return fmt.Errorf("membership: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip, closes the listeners and stops event delivery
// (undelivered events are dropped). Without a prior Leave the others will
// declare this node dead within the failure budget. Idempotent.
func (m *Member) Shutdown() error {
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		return nil
	}
	m.shutdown = true
	m.mu.Unlock()
	err := m.list.Shutdown()
	for _, s := range m.del.takeSinks() {
		s.close()
	}
	if err != nil {
		return fmt.Errorf("membership: shutdown: %w", err)
	}
	return nil
}

// Subscribe returns a channel receiving every membership event from now on,
// in order, for callers that do not use actors. The channel is fed from an
// unbounded queue, so a slow reader never blocks memberlist. cancel stops
// delivery and releases the queue; it does not close the channel. Shutdown
// cancels all subscriptions.
func (m *Member) Subscribe() (events <-chan Event, cancel func()) {
	ch := make(chan Event)
	s := newSink(func(e Event, done <-chan struct{}) bool {
		select {
		case ch <- e:
			return true
		case <-done:
			return false
		}
	})
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		s.close()
		return ch, func() {}
	}
	m.del.addSink(s)
	m.mu.Unlock()
	return ch, func() {
		m.del.removeSink(s)
		s.close()
	}
}

func (m *Member) isShutdown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shutdown
}

// bindTransport binds memberlist's network transport itself (memberlist
// does when Config.Transport is nil) and wraps it: with a secret key in
// the gossip handshake's guard (guard.go), with a partition switch in
// the switch's transport, so that cuts apply to gossip. A bind to port 0
// retries on a clash, as memberlist's own does: the UDP and TCP ports
// are picked apart.
func bindTransport(mc *memberlist.Config, cfg Config) error {
	nc := &memberlist.NetTransportConfig{BindAddrs: []string{mc.BindAddr}, BindPort: mc.BindPort, Logger: mc.Logger}
	tries := 1
	if mc.BindPort == 0 {
		tries = 10
	}
	var nt *memberlist.NetTransport
	var err error
	for range tries {
		if nt, err = memberlist.NewNetTransport(nc); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("membership: start: bind the gossip port: %w", err)
	}
	if mc.BindPort == 0 {
		mc.BindPort = nt.GetAutoBindPort()
		if mc.AdvertisePort == 0 {
			mc.AdvertisePort = mc.BindPort
		}
	}
	var t memberlist.NodeAwareTransport = nt
	if len(cfg.SecretKey) > 0 {
		g, err := guard(nt, cfg.SecretKey, min(preauth.DefaultHandshakeTimeout, mc.TCPTimeout), cfg.Logger)
		if err != nil {
			_ = nt.Shutdown()
			return err
		}
		t = g
	}
	if cfg.Partition != nil {
		t = cfg.Partition.Transport(t)
	}
	mc.Transport = t
	return nil
}
