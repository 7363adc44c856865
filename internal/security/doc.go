// Package security holds atoll's attack suite: its tests start real
// clusters (node processes, the embedded NATS server, gossip and the
// transfer port on loopback) and repeat, from the test process as an
// attacker on the same network would, each attack that worked before the
// cluster was authenticated, showing that each now fails.
//
// # Trust model
//
// A cluster has one secret (32 random bytes; `atoll start --head`
// generates it and keeps it 0600 in the per-user state directory, or it
// is given with ATOLL_SECRET / ATOLL_SECRET_FILE / --secret-file). Every
// node, driver and CLI command of the cluster holds it; whoever holds it
// is trusted with everything: submitting work, running programs on the
// nodes as the node's user, reading every object. Channel keys are
// derived from it (HMAC-SHA256 under a label per channel):
//
//   - NATS (control plane): the embedded server requires the derived
//     token from every client; without it a client cannot connect, so it
//     can neither read task specs and arguments nor publish results,
//     frees, kills, leave reports or node registrations. On an existing
//     NATS server (--nats) its own accounts apply (--nats-creds).
//   - Gossip (memberlist): every message is encrypted and authenticated
//     with AES-256-GCM under the derived key; a member without it cannot
//     join, read the membership or suspect a node.
//   - Object transfer: a connection must pass a mutual HMAC
//     challenge-response on the derived key before its first request; a
//     peer without it reads no object, and a node never reads bytes from
//     a server that does not hold the key.
//
// TLS (--tls-cert, --tls-key, --tls-ca or ATOLL_TLS_*) encrypts the NATS
// and transfer connections as well (mutual TLS with a CA); without TLS
// the traffic of an authenticated cluster can be read by anyone on the
// path between machines, and an attacker on the path could hijack a
// connection after its handshake. Gossip is always encrypted.
//
// A node started without --worker-binary runs each job's driver binary,
// but only the file whose SHA-256 the driver registered: a task naming
// another binary, or a file changed since, is refused.
//
// Roles: the head's NATS server gives each user its role's subjects
// (cluster.Permissions). A node's connection publishes its own load
// report only and reads its own subjects only; a reader (the reader
// token, without the secret) reads the GCS and the nodes' stats and
// changes nothing; the nodes' crash and partition subjects are open only
// on a head started with fault injection. TestRolePermissions and
// TestFaultInjectionNeedsTheHead try each refused subject.
//
// Not covered: the jobs of one cluster trust each other (a job's workers
// map the node's whole shared-memory arena and can read other jobs'
// objects); a holder of the secret can derive every role's password, so
// roles do not stop a secret holder from posing as another node.
package security
