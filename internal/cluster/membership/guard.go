package membership

import (
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/atoll-runtime/atoll/internal/preauth"
)

// gossipHandshake is the handshake a stream connection to the gossip port
// passes before memberlist reads a byte of it. memberlist's own
// encryption covers packets and stream contents, but it reads a stream's
// announced length (up to 20 MiB) and buffers that much before it can
// check anything: without this, a stranger holding 30 connections, each
// announcing 20 MiB and withholding the last byte, grows a node by
// gigabytes.
var gossipHandshake = preauth.Protocol{Magic: [4]byte{'A', 'T', 'L', 'G'}, Version: 1, Name: "gossip"}

// streamKey derives the stream handshake's key from the gossip key, so
// that the AES key itself keys nothing else.
func streamKey(gossipKey []byte) []byte {
	m := hmac.New(sha256.New, gossipKey)
	m.Write([]byte("atoll gossip stream handshake"))
	return m.Sum(nil)
}

// guardedTransport wraps memberlist's network transport: streams it
// accepts are handed to memberlist only once their peers passed the
// gossip handshake, with the connections still in it bounded by a
// preauth.Gate; streams it dials run the client's side first. Packets
// pass as they are (one read of at most 64 KiB, then memberlist's
// AES-GCM check).
type guardedTransport struct {
	memberlist.NodeAwareTransport
	key     []byte
	timeout time.Duration
	gate    *preauth.Gate
	log     *slog.Logger

	streams chan net.Conn
	// stopping closes when Shutdown starts: the pump then closes what
	// the inner transport still hands over (its listener blocks on an
	// unbuffered channel, and its Shutdown waits for it); done closes
	// once the inner transport is down.
	stopping chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once

	unauthenticated atomic.Uint64
}

func guard(inner memberlist.NodeAwareTransport, gossipKey []byte, timeout time.Duration, log *slog.Logger) (*guardedTransport, error) {
	gate, err := preauth.NewGate(preauth.Limits{})
	if err != nil {
		return nil, err
	}
	t := &guardedTransport{NodeAwareTransport: inner, key: streamKey(gossipKey), timeout: timeout, gate: gate, log: log,
		streams: make(chan net.Conn), stopping: make(chan struct{}), done: make(chan struct{})}
	t.wg.Add(1)
	go t.pump()
	return t, nil
}

func (t *guardedTransport) pump() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case c := <-t.NodeAwareTransport.StreamCh():
			select {
			case <-t.stopping:
				_ = c.Close()
				continue
			default:
			}
			w, v := t.gate.Admit(c)
			if v == preauth.Closed {
				_ = c.Close()
			}
			if v != preauth.Admitted {
				continue
			}
			t.wg.Add(1)
			go t.authenticate(c, w)
		}
	}
}

// authenticate runs the server's side of the handshake on c (read
// through w) and hands c to memberlist if its peer passed.
func (t *guardedTransport) authenticate(c, w net.Conn) {
	defer t.wg.Done()
	ok, err := gossipHandshake.Serve(w, t.key, t.timeout)
	if !ok {
		if t.gate.Drop(c) {
			if n := t.unauthenticated.Add(1); n&(n-1) == 0 { // 1, 2, 4, ...: a flood logs a few lines
				t.log.Warn("membership: closed a gossip stream that failed the handshake", "remote", c.RemoteAddr().String(), "err", err, "total", n)
			}
		}
		_ = c.Close()
		return
	}
	if !t.gate.Pass(c) {
		_ = c.Close()
		return
	}
	select {
	case t.streams <- c:
	case <-t.stopping:
		_ = c.Close()
	}
}

// StreamCh implements memberlist.Transport: authenticated streams only.
func (t *guardedTransport) StreamCh() <-chan net.Conn { return t.streams }

// DialTimeout implements memberlist.Transport: the stream is returned
// once this end passed the handshake.
func (t *guardedTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.NodeAwareTransport.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return t.dialed(c, addr, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *guardedTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.NodeAwareTransport.DialAddressTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return t.dialed(c, addr.Addr, timeout)
}

func (t *guardedTransport) dialed(c net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 || timeout > t.timeout {
		timeout = t.timeout
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := gossipHandshake.Dial(c, t.key, addr); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// Shutdown implements memberlist.Transport.
func (t *guardedTransport) Shutdown() error {
	var err error
	t.once.Do(func() {
		close(t.stopping)
		t.gate.Close()
		err = t.NodeAwareTransport.Shutdown()
		close(t.done)
		t.wg.Wait()
	})
	return err
}
