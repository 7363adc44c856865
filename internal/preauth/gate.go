package preauth

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Limits bound a Gate; zero fields take the defaults.
type Limits struct {
	// MaxPending bounds the connections in their handshakes. Default
	// DefaultMaxPending.
	MaxPending int
	// MaxPendingPerAddr bounds one remote address's pending connections.
	// Default DefaultMaxPendingPerAddr.
	MaxPendingPerAddr int
}

// Defaults of Limits.
const (
	DefaultMaxPending        = 64
	DefaultMaxPendingPerAddr = 16
)

// Validate fills the defaults; a negative field is ErrInvalidArgument.
func (l Limits) Validate() (Limits, error) {
	if l.MaxPending < 0 || l.MaxPendingPerAddr < 0 {
		return l, errs.Invalidf("preauth: negative Limits %+v", l)
	}
	if l.MaxPending == 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.MaxPendingPerAddr == 0 {
		l.MaxPendingPerAddr = DefaultMaxPendingPerAddr
	}
	return l, nil
}

// Gate tracks a listener's pending connections: Admit each accepted one,
// run the handshake on the connection it returns, then Pass it (or Drop
// it on failure). Safe for concurrent use.
type Gate struct {
	limits  Limits
	refused atomic.Uint64

	mu      sync.Mutex
	pending map[net.Conn]pending
	byAddr  map[string]int
	seq     uint64
	closed  bool
}

// pending is a connection in its handshakes; spoke is set once its peer
// sent a byte (a real peer answers the server's hello at once).
type pending struct {
	host  string
	seq   uint64
	spoke *atomic.Bool
}

// NewGate returns a Gate with l (defaults filled).
func NewGate(l Limits) (*Gate, error) {
	l, err := l.Validate()
	if err != nil {
		return nil, err
	}
	return &Gate{limits: l, pending: make(map[net.Conn]pending), byAddr: make(map[string]int)}, nil
}

// Refused is the number of connections closed at a bound: refused at
// once, or closed while pending to make room.
func (g *Gate) Refused() uint64 { return g.refused.Load() }

// Pending is the number of connections in their handshakes.
func (g *Gate) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

// Verdict is what Admit did with a connection.
type Verdict int

const (
	// Admitted: the connection is pending; run the handshake on the
	// connection Admit returned.
	Admitted Verdict = iota
	// Refused: the connection's address is at its bound, or holds its
	// share of a full gate; Admit closed it (counted in Refused).
	Refused
	// Closed: the gate is closed; the connection is the caller's to
	// close.
	Closed
)

// Admit records c as pending, or refuses it when a bound is reached: a
// connection from an address already holding MaxPendingPerAddr is closed
// at once, as is one that comes when MaxPending are pending and its
// address holds about as many as the biggest holder; otherwise, at
// MaxPending, the oldest pending connection of the biggest holder that
// has not spoken yet (else its oldest) is closed to make room. Refusing
// the newcomer costs the node an accept and a close, so an attacker
// reconnecting as fast as it can spends little of the node's CPU, and a
// peer from an address holding fewer always gets in. It returns the
// connection to run the handshake on (c, noting when its peer speaks).
func (g *Gate) Admit(c net.Conn) (net.Conn, Verdict) {
	host := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, Closed
	}
	refuse := g.byAddr[host] >= g.limits.MaxPendingPerAddr
	if !refuse && len(g.pending) >= g.limits.MaxPending {
		most, n := "", 0
		for h, k := range g.byAddr {
			if k > n || k == n && h < most {
				most, n = h, k
			}
		}
		if refuse = g.byAddr[host]+1 >= n; !refuse {
			g.evictLocked(most)
		}
	}
	if refuse {
		g.mu.Unlock()
		g.refused.Add(1)
		_ = c.Close()
		return nil, Refused
	}
	spoke := new(atomic.Bool)
	g.seq++
	g.pending[c] = pending{host: host, seq: g.seq, spoke: spoke}
	g.byAddr[host]++
	g.mu.Unlock()
	return spokeConn{Conn: c, spoke: spoke}, Admitted
}

// evictLocked closes host's oldest pending connection that never spoke,
// else its oldest. g.mu is held.
func (g *Gate) evictLocked(host string) {
	var oldest net.Conn
	var best pending
	for c, p := range g.pending {
		if p.host != host {
			continue
		}
		silent, bestSilent := !p.spoke.Load(), oldest != nil && !best.spoke.Load()
		if oldest == nil || silent && !bestSilent || silent == bestSilent && p.seq < best.seq {
			oldest, best = c, p
		}
	}
	if oldest != nil {
		g.dropLocked(oldest)
		g.refused.Add(1)
		_ = oldest.Close()
	}
}

func (g *Gate) dropLocked(c net.Conn) bool {
	p, ok := g.pending[c]
	if !ok {
		return false
	}
	delete(g.pending, c)
	if g.byAddr[p.host]--; g.byAddr[p.host] <= 0 {
		delete(g.byAddr, p.host)
	}
	return true
}

// Pass moves c (as given to Admit) out of the pending set once its peer
// proved the key; false if it was evicted (and closed) meanwhile or the
// gate closed.
func (g *Gate) Pass(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dropLocked(c) && !g.closed
}

// Drop forgets c after a failed handshake; it reports whether c was still
// pending (false: it had been evicted, and counted so).
func (g *Gate) Drop(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dropLocked(c)
}

// Close closes every pending connection; Admit refuses from then on.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	conns := make([]net.Conn, 0, len(g.pending))
	for c := range g.pending {
		conns = append(conns, c)
		g.dropLocked(c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// spokeConn notes that its peer sent something.
type spokeConn struct {
	net.Conn
	spoke *atomic.Bool
}

func (c spokeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.spoke.Load() {
		c.spoke.Store(true)
	}
	return n, err
}
