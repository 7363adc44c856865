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
//     join, read the membership or suspect a node. A gossip stream (TCP)
//     must first pass a challenge-response on the key, so a stranger
//     cannot make a node buffer a message it announces.
//   - Object transfer: a connection must pass a mutual HMAC
//     challenge-response on the derived key before its first request; a
//     peer without it reads no object, and a node never reads bytes from
//     a server that does not hold the key. Connections in their
//     handshakes are bounded apart from authenticated ones (64, 16 per
//     address, 3 s each), so silent connections cannot keep nodes out.
//
// TLS (--tls-cert, --tls-key, --tls-ca or ATOLL_TLS_*) encrypts the NATS
// and transfer connections as well (mutual TLS with a CA); without TLS
// the traffic of an authenticated cluster can be read by anyone on the
// path between machines, and an attacker on the path could hijack a
// connection after its handshake. Gossip is always encrypted.
//
// A node started without --worker-binary runs each job's driver binary,
// but only the file whose SHA-256 the driver registered: a task naming
// another binary, or a file changed since, is refused. Its workers run a
// read-only copy of the bytes that were hashed, never the path, and stop
// once no running job uses that binary.
//
// Roles: the head's NATS server gives each user its role's subjects
// (cluster.Permissions). A node's connection publishes its own load
// report only and reads its own subjects only; a reader (the reader
// token, without the secret) reads the GCS and the nodes' stats and
// changes nothing; the nodes' crash and partition subjects are open only
// on a head started with fault injection. TestRolePermissions and
// TestFaultInjectionNeedsTheHead try each refused subject. Work forwarded
// to a node is kept only for an origin that gossip has as a live member:
// a secret holder claiming an origin that never joined has its work held
// for a grace (the forward lease) and then refused with
// PERMISSION_DENIED (TestForwardFromNonMemberRefused).
//
// # Mechanisms
//
//	channel          mechanism                                           where
//	NATS             the embedded server admits a user (head, node.<id>,  natsembed/auth.go,
//	                 client, reader) whose password is                    cluster/permissions.go,
//	                 Secret.NATSPassword(user) (natsembed.Config.         nodeconfig/credentials.go
//	                 Authorize = cluster.Authorizer, nats-server's
//	                 CustomClientAuthentication) and gives it its role's
//	                 subjects (cluster.Permissions: allow lists for
//	                 publish and subscribe; replies under the user's own
//	                 inbox prefix _INBOX.<user>); --nats servers use their
//	                 own auth (NATSCreds)
//	gossip           memberlist SecretKey = Secret.GossipKey() (AES-256-  cluster/membership
//	                 GCM, incoming and outgoing verified); each TCP
//	                 stream first passes a mutual HMAC challenge on a
//	                 key derived from it (preauth.Protocol), 3 s deadline
//	object transfer  a mutual HMAC challenge on Secret.TransferKey()      remote/handshake.go,
//	                 before the first request, 3 s deadline; both ports   preauth
//	                 hold connections in their handshakes in a
//	                 preauth.Gate (64, 16 per address)
//	TLS (optional)   tls.Configs built from PEM files: the head's NATS    nodeconfig/credentials.go,
//	                 listener (verifying clients with a CA) and every     remote
//	                 transfer server and client; in-process NATS
//	                 connections skip it
//
// The secret (package clusterkey) is never printed: String and LogValue
// redact it, Fingerprint names it in logs. Where it comes from
// (nodeconfig.Credentials.FindSecret): the Secret field (atoll.WithSecret)
// or ATOLL_SECRET, the SecretFile field (--secret-file) or
// ATOLL_SECRET_FILE, then nodeconfig.SecretFile()
// ($TMPDIR/atoll-<uid>/cluster_secret, checked with CheckOwned). A head
// that finds none generates one (`atoll start --head` saves it there
// first; a head started through the Go API keeps it in memory:
// Node.Secret). An embedded node needs none: nothing outside its process
// reaches it. No credential reaches user code through the environment:
// worker processes start without the credential variables
// (nodeconfig.WithoutCredentials), and a job driver reads its credentials
// once from an inherited pipe (descriptor 3, ATOLL_CREDENTIALS_FD) that
// its own workers do not inherit (TestNoSecretInWorkerEnv). A task can
// still read the head's secret file on the head's machine, as the same
// user: run code you do not trust as another user.
//
// Worker binaries: the driver hashes its worker binary at Init (a worker
// process hashes its own on its first submission) and every TaskSpec
// carries worker_binary_sha256; before queueing a task for a per-job
// binary the raylet (internal/raylet's trust.go) copies the file at that
// path (a regular executable) into the session's bin/ directory while
// hashing it, and keeps the copy (mode 0500, named by its SHA-256) only
// if the hash is the registered one (the path is copied again when its
// size or mtime changes; at most 64 paths remembered). Workers are keyed
// by the copy, so a rebuilt binary never reaches a worker of the old
// build (TestRebuiltDriverRunsNewBuild); once the nodes of every job
// using it have left, its workers stop and the copy is removed
// (TestStoppedJobLeavesNoWorkers). The node's own --worker-binary is
// trusted as is.
//
// Roles in detail (cluster.Permissions): the head's in-process connection
// has every subject; a node's (node.<id>) publishes every node's work
// subjects, frees, kills, owner exits, GCS and AMM requests, jobs'
// worker output and replies, and its own load report only, and subscribes
// to its own node subjects, loads, frees, kills, owner exits, GCS events,
// jobs' worker output and its own inbox; a client (the CLI, harnesses)
// publishes what a node may ask but no load
// report; a reader publishes only to the GCS's read subject
// (gcs.ReadSubject) and the nodes' stats, objects, timeline, logs, logread
// and faults subjects. Clients and readers subscribe to loads, GCS events
// and their own inbox. A node's GCS registration goes on a subject of its
// own that only its user may publish on, and the GCS serves it there only
// for that id; registrations never followed by a load report expire
// (TestRegistrationsOnlyForOneself).
// Without fault injection on the head (nodeconfig.Config.FaultInjection)
// the nodes' crash and partition subjects are denied to all three; the
// head's NodeInfo carries fault_injection, and the cluster's KillNode and
// PartitionNode read it from the GCS first and fail with
// ErrPermissionDenied instead of waiting out a request the server
// dropped. A node logs what the server reports asynchronously (a
// permissions violation) through its connection's error handler; a
// clusterclient.Dial connection (the CLI, tools) is closed on one, so its
// waiting requests fail at once, and clusterclient.LastPermissionViolation
// says which subject was refused. The head logs refused credentials at
// most once a second, with a count.
//
// Not covered: the jobs of one cluster trust each other (a job's workers
// map the node's whole shared-memory arena and can read other jobs'
// objects); a holder of the secret can derive every role's password, so
// roles do not stop a secret holder from posing as another node.
package security
