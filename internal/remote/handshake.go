package remote

import "github.com/atoll-runtime/atoll/internal/preauth"

// transferHandshake proves, both ways, that the two ends of a transfer
// connection hold the cluster's transfer key before any object id or
// byte crosses it (package preauth). A server closes a connection whose
// MAC is wrong (Server.Unauthenticated counts them); a client fails with
// ErrUnauthenticated when the server's MAC is wrong, so a node that does
// not hold the key can neither read an object nor serve forged bytes.
var transferHandshake = preauth.Protocol{Magic: [4]byte{'A', 'T', 'L', 'T'}, Version: 1, Name: "transfer"}

// DefaultHandshakeTimeout bounds the handshake on both ends.
const DefaultHandshakeTimeout = preauth.DefaultHandshakeTimeout
