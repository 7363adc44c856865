package preauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Wire sizes of the handshake.
const (
	magicLen = 4
	nonceLen = 32
	macLen   = sha256.Size
	helloLen = magicLen + 1 + nonceLen
	// ReplyLen is the client's answer: its nonce and its MAC.
	ReplyLen = nonceLen + macLen

	// DefaultHandshakeTimeout bounds the handshake on both ends.
	DefaultHandshakeTimeout = 3 * time.Second
)

// Protocol names one use of the handshake: its 4-byte magic and version
// (a peer of another use or version is refused with a clear error), and
// a name for errors ("transfer", "gossip").
type Protocol struct {
	Magic   [magicLen]byte
	Version byte
	Name    string
}

func mac(key []byte, role string, ns, nc []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(role))
	m.Write(ns)
	m.Write(nc)
	return m.Sum(nil)
}

// Serve runs the server's side on c within timeout; false means the peer
// failed it (or went away) and c must be closed. c's deadline is cleared
// after.
func (p Protocol) Serve(c net.Conn, key []byte, timeout time.Duration) (ok bool, err error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	var hello [helloLen]byte
	copy(hello[:], p.Magic[:])
	hello[magicLen] = p.Version
	ns := hello[magicLen+1:]
	if _, err := rand.Read(ns); err != nil {
		return false, err
	}
	if _, err := c.Write(hello[:]); err != nil {
		return false, err
	}
	var reply [ReplyLen]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return false, err
	}
	nc := reply[:nonceLen]
	if !hmac.Equal(reply[nonceLen:], mac(key, "client", ns, nc)) {
		return false, nil
	}
	if _, err := c.Write(mac(key, "server", ns, nc)); err != nil {
		return false, err
	}
	return true, nil
}

// Dial runs the client's side on a fresh connection to addr. It fails
// with errs.ErrUnavailable when the connection breaks before the peer
// could judge the key, and errs.ErrUnauthenticated when the peer is not
// a server of p or does not hold key (or refused this one). c's
// deadline is the caller's.
func (p Protocol) Dial(c net.Conn, key []byte, addr string) error {
	var hello [helloLen]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return errs.Unavailablef("%s handshake with %s: %v (does the peer require the cluster secret? is it a %s port?)", p.Name, addr, err, p.Name)
	}
	if !bytes.Equal(hello[:magicLen], p.Magic[:]) || hello[magicLen] != p.Version {
		return errs.Unauthenticatedf("%s: %s did not start the %s handshake (an old or unauthenticated node, or not a %s port)", p.Name, addr, p.Name, p.Name)
	}
	ns := hello[magicLen+1:]
	var reply [ReplyLen]byte
	nc := reply[:nonceLen]
	if _, err := rand.Read(nc); err != nil {
		return err
	}
	copy(reply[nonceLen:], mac(key, "client", ns, nc))
	if _, err := c.Write(reply[:]); err != nil {
		return errs.Unavailablef("%s handshake with %s: %v (a peer closes the connection when the cluster secrets differ)", p.Name, addr, err)
	}
	var m [macLen]byte
	if _, err := io.ReadFull(c, m[:]); err != nil {
		return errs.Unauthenticatedf("%s: %s refused this node's %s key (do both hold the same cluster secret?): %v", p.Name, addr, p.Name, err)
	}
	if !hmac.Equal(m[:], mac(key, "server", ns, nc)) {
		return errs.Unauthenticatedf("%s: %s does not hold the cluster's %s key", p.Name, addr, p.Name)
	}
	return nil
}
