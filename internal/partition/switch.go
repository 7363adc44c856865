// Package partition cuts a node off the network from inside the process,
// for fault plans: this kernel has no netem, and a partition must be
// replayable from a seed. A Switch sits on every path a node talks to
// other nodes through:
//
//   - its NATS connection (Dialer, for nats.SetCustomDialer): a cut closes
//     the connection and refuses new dials, so nats.go reconnects, with
//     its usual back-off, once the cut heals;
//   - its object-transfer client and server (Dialer, Admit): a cut closes
//     the open connections and refuses new ones;
//   - its memberlist transport (Transport): a cut drops gossip packets in
//     the cut's direction and refuses stream connections.
//
// A cut is one-way only for gossip packets (UDP): TCP needs both
// directions, so a one-way cut breaks the node's TCP connections both
// ways, as a real one-way loss does once its retransmissions time out.
// A cut isolates the node from every other node; the node's own worker
// processes (local sockets) are not affected.
package partition

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction is what a cut blocks, seen from the node.
type Direction int

// The directions of a cut.
const (
	// Both blocks everything in and out.
	Both Direction = iota + 1
	// Inbound blocks what other nodes send to this one (gossip packets;
	// TCP both ways).
	Inbound
	// Outbound blocks what this node sends (gossip packets; TCP both ways).
	Outbound
)

// String names the direction as plans write it.
func (d Direction) String() string {
	switch d {
	case Both:
		return "both"
	case Inbound:
		return "inbound"
	case Outbound:
		return "outbound"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// ParseDirection reads "both" (or ""), "inbound" or "outbound".
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "", "both":
		return Both, nil
	case "inbound":
		return Inbound, nil
	case "outbound":
		return Outbound, nil
	}
	return 0, fmt.Errorf("direction %q: want both, inbound or outbound", s)
}

// MaxCut bounds one cut's duration: a longer one is refused (a cut heals
// by itself, since no message can reach a cut node to heal it).
const MaxCut = 10 * time.Minute

// ErrCut is what a dial or an accept returns while the node is cut off.
var ErrCut = errors.New("partition: the node is cut off from the network (fault plan)")

// Switch is one node's network switch. The zero value is not usable; use
// New. Its methods are safe for concurrent use.
type Switch struct {
	mu    sync.Mutex // guards the fields below; never held across I/O
	dir   Direction  // 0: connected
	until time.Time
	heal  *time.Timer
	gen   uint64 // counts cuts, so a stale timer does not heal a newer one
	conns map[*trackedConn]struct{}
	// onChange, if set, is called (outside mu) on every cut and heal.
	onChange func(cut bool, dir Direction, d time.Duration)
}

// New returns a connected switch. onChange, if not nil, is told of every
// cut and heal (for the node's log and fault log).
func New(onChange func(cut bool, dir Direction, d time.Duration)) *Switch {
	return &Switch{conns: make(map[*trackedConn]struct{}), onChange: onChange}
}

// Cut cuts the node off in dir for d (at most MaxCut), closing its open
// TCP connections; it heals by itself after d. A cut while cut replaces
// the first (its direction, and the time left).
func (s *Switch) Cut(dir Direction, d time.Duration) error {
	if dir < Both || dir > Outbound {
		return fmt.Errorf("partition: direction %v: want both, inbound or outbound", dir)
	}
	if d <= 0 || d > MaxCut {
		return fmt.Errorf("partition: a cut of %v: want more than 0 and at most %v", d, MaxCut)
	}
	s.mu.Lock()
	s.dir, s.until = dir, time.Now().Add(d)
	s.gen++
	gen := s.gen
	if s.heal != nil {
		s.heal.Stop()
	}
	s.heal = time.AfterFunc(d, func() { s.healGen(gen) })
	conns := make([]*trackedConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	clear(s.conns)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Conn.Close()
	}
	if s.onChange != nil {
		s.onChange(true, dir, d)
	}
	return nil
}

// Heal reconnects the node now; a no-op if it is not cut.
func (s *Switch) Heal() {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	s.healGen(gen)
}

func (s *Switch) healGen(gen uint64) {
	s.mu.Lock()
	if s.gen != gen || s.dir == 0 {
		s.mu.Unlock()
		return
	}
	dir := s.dir
	s.dir, s.until = 0, time.Time{}
	if s.heal != nil {
		s.heal.Stop()
		s.heal = nil
	}
	s.mu.Unlock()
	if s.onChange != nil {
		s.onChange(false, dir, 0)
	}
}

// State reports the current cut (0 when connected) and when it heals.
func (s *Switch) State() (Direction, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir, s.until
}

// blocks reports whether the node is cut off in the given direction of a
// packet (inbound: to this node). TCP asks blocks(any).
func (s *Switch) blocks(inbound bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.dir {
	case Both:
		return true
	case Inbound:
		return inbound
	case Outbound:
		return !inbound
	}
	return false
}

// cut reports whether the node is cut off at all (TCP cannot pass).
func (s *Switch) cut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir != 0
}

// track returns c wrapped so that a cut closes it, or closes c and
// returns ErrCut if the node is cut off now.
func (s *Switch) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	if s.dir != 0 {
		s.mu.Unlock()
		_ = c.Close()
		return nil, ErrCut
	}
	t := &trackedConn{Conn: c, s: s}
	s.conns[t] = struct{}{}
	s.mu.Unlock()
	return t, nil
}

func (s *Switch) untrack(t *trackedConn) {
	s.mu.Lock()
	delete(s.conns, t)
	s.mu.Unlock()
}

// trackedConn is a connection a cut closes.
type trackedConn struct {
	net.Conn
	s    *Switch
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() { t.s.untrack(t) })
	return t.Conn.Close()
}
