package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// AllocFunc returns the destination for an object of size bytes; the
// returned slice must have length size. In atoll it is a view of a freshly
// created (unsealed) object in the receiving node's arena. If the Pull
// then fails, the caller owns the buffer and must discard it: its
// contents are undefined.
type AllocFunc func(size uint64) ([]byte, error)

// ClientConfig configures a Client. The zero value is valid.
type ClientConfig struct {
	// MaxIdlePerAddr is how many idle connections are kept per server
	// address for reuse. Default 4: enough for a few concurrent pulls from
	// one peer without re-dialling; more pulls dial extra connections.
	MaxIdlePerAddr int
	// Dialer dials new connections. Default: a net.Dialer.
	Dialer interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	}
	// Key, when set, is proven to every server before the first request
	// (the server must prove it back): see handshake.go.
	Key []byte
	// TLS, when set, speaks TLS to every server; a config without
	// ServerName verifies the server's certificate for the host dialled.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS and key handshakes of a new
	// connection; default DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// Client pulls objects from Servers over pooled TCP connections. It is
// safe for concurrent use; each in-progress Pull owns one connection.
// mu guards idle and closed only, never across I/O.
type Client struct {
	cfg ClientConfig

	mu     sync.Mutex
	idle   map[string][]net.Conn
	closed bool
}

// NewClient returns a Client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.MaxIdlePerAddr < 0 {
		return nil, errs.Invalidf("remote: MaxIdlePerAddr %d < 0", cfg.MaxIdlePerAddr)
	}
	if cfg.HandshakeTimeout < 0 {
		return nil, errs.Invalidf("remote: HandshakeTimeout %v < 0", cfg.HandshakeTimeout)
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.MaxIdlePerAddr == 0 {
		cfg.MaxIdlePerAddr = 4
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	return &Client{cfg: cfg, idle: make(map[string][]net.Conn)}, nil
}

// Close closes idle connections. Pulls in progress finish; their
// connections are closed instead of pooled.
func (c *Client) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.closed = true
	c.mu.Unlock()
	for _, conns := range idle {
		for _, conn := range conns {
			_ = conn.Close()
		}
	}
	return nil
}

// Pull fetches object id from the server at addr: it learns the size,
// calls alloc once for a destination of that size and streams the bytes
// into it. It returns the size on success. On error the buffer (if alloc
// was called) holds undefined contents and must not be used.
func (c *Client) Pull(ctx context.Context, addr string, id ids.ObjectID, alloc AllocFunc) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	conn, reused, err := c.get(ctx, addr)
	if err != nil {
		return 0, err
	}
	status, n, err := c.request(ctx, conn, id)
	if err != nil && reused && ctx.Err() == nil {
		// A pooled connection may have been closed by the server while
		// idle; retry once on a fresh one before giving up.
		_ = conn.Close()
		if conn, err = c.dial(ctx, addr); err != nil {
			return 0, err
		}
		status, n, err = c.request(ctx, conn, id)
	}
	if err != nil {
		_ = conn.Close()
		return 0, c.ioError(ctx, addr, id, "request", err)
	}

	switch status {
	case statusOK:
	case statusNotFound, statusError:
		msg, err := readMessage(ctx, conn, n)
		if err != nil {
			_ = conn.Close()
			return 0, c.ioError(ctx, addr, id, "reply", err)
		}
		c.put(addr, conn)
		if status == statusNotFound {
			return 0, errs.NotFoundf("remote: object %x not found at %s: %s", id[:], addr, msg)
		}
		return 0, errs.Unavailablef("remote: pull %x from %s: %s", id[:], addr, msg)
	default:
		_ = conn.Close()
		return 0, errs.Unavailablef("remote: pull %x from %s: bad status %d", id[:], addr, status)
	}

	buf, err := alloc(n)
	if err == nil && uint64(len(buf)) != n {
		err = errs.Invalidf("remote: alloc returned %d bytes, want %d", len(buf), n)
	}
	if err != nil {
		// The object bytes are on their way; the connection cannot be
		// reused without draining them, so drop it.
		_ = conn.Close()
		return 0, err
	}
	if err := readBody(ctx, conn, buf); err != nil {
		_ = conn.Close()
		return 0, c.ioError(ctx, addr, id, "body", err)
	}
	c.put(addr, conn)
	return n, nil
}

func (c *Client) ioError(ctx context.Context, addr string, id ids.ObjectID, stage string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("remote: pull %x from %s: %w", id[:], addr, cerr)
	}
	return errs.Unavailablef("remote: pull %x from %s: %s: %v", id[:], addr, stage, err)
}

// request sends the pull request and reads the reply header.
func (c *Client) request(ctx context.Context, conn net.Conn, id ids.ObjectID) (byte, uint64, error) {
	var status byte
	var n uint64
	err := withContext(ctx, conn, func() error {
		req := encodeRequest(id)
		if _, err := conn.Write(req[:]); err != nil {
			return err
		}
		var err error
		status, n, err = readReply(conn)
		return err
	})
	return status, n, err
}

func readMessage(ctx context.Context, conn net.Conn, n uint64) (string, error) {
	if n > maxMessageLen {
		return "", fmt.Errorf("message length %d exceeds %d", n, maxMessageLen)
	}
	b := make([]byte, n)
	err := withContext(ctx, conn, func() error {
		_, err := io.ReadFull(conn, b)
		return err
	})
	return string(b), err
}

// readBody fills buf from conn in chunks of ChunkSize. A short stream
// (peer closed or failed) is an error.
func readBody(ctx context.Context, conn net.Conn, buf []byte) error {
	return withContext(ctx, conn, func() error {
		for off := 0; off < len(buf); off += ChunkSize {
			end := min(off+ChunkSize, len(buf))
			if _, err := io.ReadFull(conn, buf[off:end]); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		return nil
	})
}

// withContext runs fn, interrupting its blocking I/O on conn when ctx is
// done by moving the connection's deadline into the past.
func withContext(ctx context.Context, conn net.Conn, fn func() error) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	err := fn()
	if !stop() {
		// The AfterFunc ran (or is running): the deadline is poisoned.
		// The caller sees ctx.Err() via ioError and closes conn.
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

func (c *Client) get(ctx context.Context, addr string) (conn net.Conn, reused bool, err error) {
	c.mu.Lock()
	if conns := c.idle[addr]; len(conns) > 0 {
		conn = conns[len(conns)-1]
		c.idle[addr] = conns[:len(conns)-1]
		c.mu.Unlock()
		return conn, true, nil
	}
	c.mu.Unlock()
	conn, err = c.dial(ctx, addr)
	return conn, false, err
}

func (c *Client) dial(ctx context.Context, addr string) (net.Conn, error) {
	conn, err := c.cfg.Dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("remote: dial %s: %w", addr, cerr)
		}
		return nil, errs.Unavailablef("remote: dial %s: %v", addr, err)
	}
	if conn, err = c.authenticate(ctx, conn, addr); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("remote: dial %s: %w", addr, cerr)
		}
		return nil, err
	}
	return conn, nil
}

// authenticate runs the TLS and key handshakes on a fresh connection,
// closing it if they fail.
func (c *Client) authenticate(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
	if c.cfg.TLS != nil {
		cfg := c.cfg.TLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(newBatchConn(conn), cfg)
		hctx, cancel := context.WithTimeout(ctx, c.cfg.HandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = conn.Close()
			return nil, errs.Unauthenticatedf("remote: TLS with %s: %v", addr, err)
		}
		conn = tc
	}
	if len(c.cfg.Key) > 0 {
		// A peer that never answers must not hold a pull forever.
		_ = conn.SetDeadline(time.Now().Add(c.cfg.HandshakeTimeout))
		err := withContext(ctx, conn, func() error { return transferHandshake.Dial(conn, c.cfg.Key, addr) })
		if err != nil {
			_ = conn.Close()
			return nil, err
		}
		_ = conn.SetDeadline(time.Time{})
	}
	return conn, nil
}

func (c *Client) put(addr string, conn net.Conn) {
	c.mu.Lock()
	if !c.closed && len(c.idle[addr]) < c.cfg.MaxIdlePerAddr {
		c.idle[addr] = append(c.idle[addr], conn)
		conn = nil
	}
	c.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}
