package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/preauth"
)

// ServerOptions bound what peers can hold of a Server; zero fields take
// the defaults.
type ServerOptions struct {
	// MaxConns bounds the authenticated connections; one past it is
	// closed at once (the peer's pull fails and may retry). Default
	// DefaultMaxConns.
	MaxConns int
	// Pending bounds the connections still in their handshakes, apart
	// from MaxConns: connections that have proven nothing never take an
	// authenticated one's place (package preauth says how). Zero fields
	// take preauth's defaults.
	Pending preauth.Limits
	// IdleTimeout closes a connection that sends no request for this
	// long (clients retry a pooled connection the server closed).
	// Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// WriteTimeout bounds each chunk's write: a reader that stops reading
	// loses its connection, and the object's pin is released. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Key, when set, makes every connection prove it holds the same key
	// before its first request (the handshake in handshake.go); a
	// connection that fails is closed and counted (Unauthenticated).
	Key []byte
	// TLS, when set, serves TLS (before the handshake). Require client
	// certificates in it (ClientAuth) for mutual TLS.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS and key handshakes; default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Admit, if set, is asked about every accepted connection: it returns
	// the connection to serve (possibly wrapped), or an error after
	// closing it (a node cut off by a fault plan's partition).
	Admit func(net.Conn) (net.Conn, error)
}

// Defaults of ServerOptions.
const (
	DefaultMaxConns     = 256
	DefaultIdleTimeout  = 2 * time.Minute
	DefaultWriteTimeout = 30 * time.Second
)

// Server serves objects from an ObjectSource to remote Clients.
//
// Goroutines: one accept loop, plus one per open connection (at most
// MaxConns). Close stops all of them and waits. mu guards conns and
// closed only; it is never held across I/O.
type Server struct {
	src  ObjectSource
	ln   net.Listener
	opts ServerOptions
	// refused counts connections closed past MaxConns; unauthenticated
	// those that failed the TLS or key handshake.
	refused, unauthenticated atomic.Uint64

	ctx    context.Context // cancelled by Close; passed to src.Open
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // authenticated
	closed bool
	gate   *preauth.Gate // the connections in their handshakes
}

// Listen starts a Server on addr (e.g. "127.0.0.1:0") serving src, with
// the default options.
func Listen(addr string, src ObjectSource) (*Server, error) {
	return ListenWith(addr, src, ServerOptions{})
}

// ListenWith is Listen with options.
func ListenWith(addr string, src ObjectSource, opts ServerOptions) (*Server, error) {
	if opts.MaxConns < 0 || opts.IdleTimeout < 0 || opts.WriteTimeout < 0 || opts.HandshakeTimeout < 0 {
		return nil, errs.Invalidf("remote: negative ServerOptions %+v", opts)
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.HandshakeTimeout == 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if src == nil {
		return nil, errs.Invalidf("remote: nil ObjectSource")
	}
	gate, err := preauth.NewGate(opts.Pending)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, errs.Unavailablef("remote: listen %s: %v", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{src: src, ln: ln, opts: opts, ctx: ctx, cancel: cancel, conns: make(map[net.Conn]struct{}), gate: gate}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Refused is the number of connections closed past MaxConns, or past
// the Pending limits while in their handshakes.
func (s *Server) Refused() uint64 { return s.refused.Load() + s.gate.Refused() }

// Unauthenticated is the number of connections closed because they
// failed the TLS or key handshake.
func (s *Server) Unauthenticated() uint64 { return s.unauthenticated.Load() }

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection (failing transfers in
// progress on the client side) and waits for the server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.gate.Close()

	s.cancel()
	err := s.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	s.wg.Wait()
	return err
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // listener closed
		}
		if s.opts.Admit != nil {
			if c, err = s.opts.Admit(c); err != nil {
				continue
			}
		}
		watched, v := s.gate.Admit(c)
		switch v {
		case preauth.Refused:
			continue
		case preauth.Closed:
			_ = c.Close()
			return
		}
		s.wg.Add(1)
		go s.serveConn(c, watched)
	}
}

// promote moves raw from the pending connections to the authenticated
// ones; false if it was evicted meanwhile (counted by the gate) or the
// authenticated ones are at MaxConns (counted as refused).
func (s *Server) promote(raw net.Conn) bool {
	if !s.gate.Pass(raw) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if len(s.conns) >= s.opts.MaxConns {
		s.refused.Add(1)
		return false
	}
	s.conns[raw] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.gate.Drop(c)
	_ = c.Close()
}

func (s *Server) serveConn(raw, watched net.Conn) {
	defer s.wg.Done()
	defer s.untrack(raw)
	c, ok := s.authenticate(watched)
	if !ok {
		if s.gate.Drop(raw) { // an evicted one was counted by the gate
			s.unauthenticated.Add(1)
		}
		return
	}
	if !s.promote(raw) {
		return
	}
	var req [requestLen]byte
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
		if _, err := io.ReadFull(c, req[:]); err != nil {
			return // peer closed, idle too long, or server closing
		}
		if req[0] != opPull {
			return // protocol violation: drop the connection
		}
		var id ids.ObjectID
		copy(id[:], req[1:])
		if err := s.serveOne(c, id); err != nil {
			return
		}
	}
}

// authenticate runs the TLS and key handshakes a server's options ask
// for; false means the connection failed them.
func (s *Server) authenticate(c net.Conn) (net.Conn, bool) {
	if s.opts.TLS != nil {
		tc := tls.Server(newBatchConn(c), s.opts.TLS)
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.HandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return nil, false
		}
		c = tc
	}
	if len(s.opts.Key) > 0 {
		if ok, _ := transferHandshake.Serve(c, s.opts.Key, s.opts.HandshakeTimeout); !ok {
			return nil, false
		}
	}
	return c, true
}

// serveOne answers one pull. A non-nil error means the connection is no
// longer usable.
func (s *Server) serveOne(c net.Conn, id ids.ObjectID) error {
	data, release, err := s.src.Open(s.ctx, id)
	if err != nil {
		status := statusError
		if errors.Is(err, errs.ErrNotFound) {
			status = statusNotFound
		}
		msg := err.Error()
		if len(msg) > maxMessageLen {
			msg = msg[:maxMessageLen]
		}
		hdr := encodeReply(status, uint64(len(msg)))
		_ = c.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		if _, err := c.Write(append(hdr[:], msg...)); err != nil {
			return err
		}
		return nil
	}
	if release != nil {
		defer release()
	}
	hdr := encodeReply(statusOK, uint64(len(data)))
	_ = c.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if _, err := c.Write(hdr[:]); err != nil {
		return err
	}
	for off := 0; off < len(data); off += ChunkSize {
		end := min(off+ChunkSize, len(data))
		_ = c.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		if _, err := c.Write(data[off:end]); err != nil {
			return err // a reader that stopped reading: the pin goes with it
		}
	}
	return nil
}
