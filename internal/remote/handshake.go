package remote

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

// The handshake proves, both ways, that the two ends of a connection hold
// the same key (the cluster's transfer key) before any object id or byte
// crosses it. The key itself never crosses:
//
//	server → client: magic "ATLT", version, 32-byte server nonce Ns
//	client → server: 32-byte client nonce Nc, HMAC(key, "client"|Ns|Nc)
//	server → client: HMAC(key, "server"|Ns|Nc)
//
// A server closes a connection whose MAC is wrong (Server.Unauthenticated
// counts them); a client fails with ErrUnauthenticated when the server's
// MAC is wrong, so a node that does not hold the key can neither read an
// object nor serve forged bytes. The handshake authenticates the peer,
// not the stream after it: against an attacker on the path, use TLS.
const (
	handshakeMagic   = "ATLT"
	handshakeVersion = 1
	nonceLen         = 32
	macLen           = sha256.Size
	helloLen         = len(handshakeMagic) + 1 + nonceLen

	// DefaultHandshakeTimeout bounds the handshake on both ends.
	DefaultHandshakeTimeout = 3 * time.Second
)

func handshakeMAC(key []byte, role string, ns, nc []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(role))
	m.Write(ns)
	m.Write(nc)
	return m.Sum(nil)
}

// serverHandshake runs the server's side; false means the peer failed it
// (or went away) and the connection must be closed.
func serverHandshake(c net.Conn, key []byte, timeout time.Duration) (ok bool, err error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	var hello [helloLen]byte
	copy(hello[:], handshakeMagic)
	hello[len(handshakeMagic)] = handshakeVersion
	ns := hello[len(handshakeMagic)+1:]
	if _, err := rand.Read(ns); err != nil {
		return false, err
	}
	if _, err := c.Write(hello[:]); err != nil {
		return false, err
	}
	var reply [nonceLen + macLen]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return false, err
	}
	nc := reply[:nonceLen]
	if !hmac.Equal(reply[nonceLen:], handshakeMAC(key, "client", ns, nc)) {
		return false, nil
	}
	if _, err := c.Write(handshakeMAC(key, "server", ns, nc)); err != nil {
		return false, err
	}
	return true, nil
}

// clientHandshake runs the client's side on a fresh connection.
func clientHandshake(c net.Conn, key []byte, addr string) error {
	var hello [helloLen]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return errs.Unavailablef("remote: handshake with %s: %v (does the peer require the cluster secret? is it a transfer port?)", addr, err)
	}
	if !bytes.Equal(hello[:len(handshakeMagic)], []byte(handshakeMagic)) || hello[len(handshakeMagic)] != handshakeVersion {
		return errs.Unauthenticatedf("remote: %s did not start the transfer handshake (an old or unauthenticated node, or not a transfer port)", addr)
	}
	ns := hello[len(handshakeMagic)+1:]
	var reply [nonceLen + macLen]byte
	nc := reply[:nonceLen]
	if _, err := rand.Read(nc); err != nil {
		return err
	}
	copy(reply[nonceLen:], handshakeMAC(key, "client", ns, nc))
	if _, err := c.Write(reply[:]); err != nil {
		return errs.Unavailablef("remote: handshake with %s: %v (a peer closes the connection when the cluster secrets differ)", addr, err)
	}
	var mac [macLen]byte
	if _, err := io.ReadFull(c, mac[:]); err != nil {
		return errs.Unauthenticatedf("remote: %s refused this node's transfer key (do both hold the same cluster secret?): %v", addr, err)
	}
	if !hmac.Equal(mac[:], handshakeMAC(key, "server", ns, nc)) {
		return errs.Unauthenticatedf("remote: %s does not hold the cluster's transfer key", addr)
	}
	return nil
}
