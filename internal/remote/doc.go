// Package remote carries node-to-node object transfer: pull-based, chunked
// streaming of an object's bytes from the node that holds it straight into
// a buffer on the receiving node (in atoll, a view of a freshly created
// object in the receiving node's arena, so there is no intermediate copy).
//
// Three pieces:
//
//   - Server listens on a TCP address and serves objects from an
//     ObjectSource. Each accepted connection is served by one goroutine
//     that answers requests one after another.
//   - Client dials (and pools) connections per address and runs Pull:
//     send the object id, learn the size, call alloc for a destination
//     buffer of exactly that size, then read the bytes into it in chunks
//     of ChunkSize. Several Pulls run concurrently over separate pooled
//     connections.
//   - Puller wraps a Client with admission (at most MaxInFlight bytes
//     being received at once; larger pulls queue) and deduplication
//     (concurrent pulls of one object id share one transfer).
//
// # Wire format
//
// Request: op byte (opPull) followed by the 20-byte ObjectID.
// Reply: status byte and a big-endian uint64. For statusOK the uint64 is
// the object size and exactly that many raw bytes follow. Otherwise it is
// the length of a UTF-8 message that follows. A connection carries one
// request at a time and is reused only after a complete reply.
//
// A cancelled Pull sets its connection's deadline to the past; a short
// stream is an error. The Puller's FIFO gate means a node only pulls what
// fits in MaxInFlight; its map of pulls in progress makes concurrent
// readers of one object on one node share one transfer.
//
// # Authentication and bounds
//
// Before the first request the two ends prove they hold the cluster's
// transfer key (handshake.go): the server sends a magic, a version and a
// nonce Ns, the client answers with its nonce Nc and HMAC(key,
// "client"|Ns|Nc), the server proves itself with HMAC(key, "server"|Ns|Nc);
// both check in constant time, within DefaultHandshakeTimeout (3 s). A
// server closes a connection whose MAC is wrong (Server.Unauthenticated
// counts them); a client fails with ErrUnauthenticated. With TLS
// (ClientConfig and ServerOptions take a tls.Config) the bytes are
// encrypted too, written in batches of records (batchconn.go).
//
// The server bounds what a peer can hold (ServerOptions). A connection
// in its handshakes is pending, apart from the authenticated ones, and
// waits in package preauth's Gate: at most 64 pending in all and 16 from
// one remote address (ServerOptions.Pending). A new connection from an
// address already at its bound is closed at once. When the gate is full,
// so is one from an address that would then hold as many as the biggest
// holder; any other makes room by closing the biggest holder's oldest
// connection that has not answered the hello (else its oldest). Both
// count in Refused.
// A peer that does not finish its handshakes within
// DefaultHandshakeTimeout is closed. So silent connections from other
// addresses cannot keep a real peer out; an attacker sharing its address
// (behind the same NAT) can delay it. At most DefaultMaxConns (256)
// authenticated connections (one more is closed at once, counted in
// Refused); a connection idle for DefaultIdleTimeout (2 minutes) is
// closed (the client retries a pooled connection the server closed on a
// fresh one), and each chunk must be written within DefaultWriteTimeout
// (30 s), so a reader that stops reading loses its connection and the
// object's pin goes with it. ServerOptions.Admit and ClientConfig.Dialer
// let a fault plan's partition (package partition) refuse connections.
//
// # Goroutines and locks
//
// A Server runs one accept goroutine and one goroutine per connection;
// Server.mu guards only the connection sets (pending and
// authenticated). Client.mu guards the idle
// connections; Puller.mu the gate, its queue and the map of pulls. No
// mutex is held across I/O.
//
// # Errors
//
// Unknown objects yield errors matching errs.ErrNotFound; dial failures,
// peers that close or fail mid-transfer and server-side source failures
// yield errors matching errs.ErrUnavailable; a cancelled context yields an
// error matching ctx.Err(). Pull never reports success for a partially
// filled buffer.
package remote

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// ObjectSource serves the bytes of objects held on a node.
//
// Open returns a read-only view of the object's bytes (in atoll, a slice
// of the local arena, pinned) and a release func that unpins it. The
// Server calls release exactly once, after the last byte has been written
// or the transfer has failed; it never retains data afterwards. Open
// returns an error matching errs.ErrNotFound if the node does not hold id.
type ObjectSource interface {
	Open(ctx context.Context, id ids.ObjectID) (data []byte, release func(), err error)
}

// ObjectSourceFunc adapts a function to ObjectSource.
type ObjectSourceFunc func(ctx context.Context, id ids.ObjectID) ([]byte, func(), error)

// Open calls f.
func (f ObjectSourceFunc) Open(ctx context.Context, id ids.ObjectID) ([]byte, func(), error) {
	return f(ctx, id)
}
