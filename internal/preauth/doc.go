// Package preauth guards a listener's connections until their peers have
// proven they hold the cluster's key, so that nothing before that proof
// can hurt a node: no large read, no slot a real peer needs, no memory
// that grows with what a stranger announces.
//
// Two parts, used by the object-transfer server (package remote) and the
// gossip stream transport (package membership):
//
//   - Gate bounds the connections still in their handshakes (pending),
//     apart from the authenticated ones: at most Limits.MaxPending in all
//     and Limits.MaxPendingPerAddr from one remote address. A newcomer
//     from an address at its bound, or holding its share of a full gate,
//     is closed at once (an accept and a close: an attacker reconnecting
//     as fast as it can costs the node little); a newcomer from an
//     address holding fewer closes the oldest pending connection of the
//     biggest holder that has not spoken yet (else its oldest). Silent
//     connections from other addresses therefore cannot keep a real peer
//     out; an attacker sharing the peer's address (behind the same NAT)
//     can delay it until its connections time out.
//   - Protocol is a mutual HMAC-SHA256 challenge-response on a key that
//     never crosses the wire.
//
// The handshake:
//
//	server → client: 4-byte magic, version, 32-byte server nonce Ns
//	client → server: 32-byte client nonce Nc, HMAC(key, "client"|Ns|Nc)
//	server → client: HMAC(key, "server"|Ns|Nc)
//
// Both ends compare in constant time and read at most 69 bytes before the
// proof, within a deadline (DefaultHandshakeTimeout). Each use has its
// own magic and its own derived key, so a transcript of one never passes
// another. It authenticates the peer, not the stream after it: against
// an attacker on the path, use TLS.
//
// # Goroutines and locks
//
// Gate.mu guards the pending set; no I/O runs under it. The handshake
// runs on the caller's goroutine.
package preauth
