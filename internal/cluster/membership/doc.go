// Package membership is atoll's gossip membership among nodes (raylets): a
// small adapter over github.com/hashicorp/memberlist, which protoactor-go
// lacks as a cluster provider.
//
// A [Member] gossips the node's id (as the memberlist node name, hex) and an
// opaque metadata blob (the raylet address and resources, encoded by the
// caller) and runs memberlist's SWIM failure detector, tuned from a single
// failure-detection budget in [Config].
//
// Memberlist calls its delegates with its own locks held, so they must never
// block. The delegates here copy the node information into a typed event
// ([NodeJoined], [NodeLeft], [NodeUpdated]) and append it to an unbounded
// per-subscriber queue; one goroutine per subscriber drains the queue into a
// protoactor PID ([Config.Events]) or a channel ([Member.Subscribe]). A slow
// or stopped receiver therefore delays only its own deliveries, never the
// failure detector.
//
// Events describe the other nodes: the local node's own join is not reported.
// A graceful [Member.Leave] is reported to the others as NodeLeft{Dead: false}
// and a failure as NodeLeft{Dead: true}. Memberlist v0.7.0 does not pass the
// leave/dead state to NotifyLeave (the Node it hands over always reads
// StateAlive), so Leave first gossips a "leaving" flag in a one-byte header of
// the node metadata; a node seen leaving without that flag is reported dead.
//
// # Failure budget
//
// One budget (Config.FailureBudget; a node's --failure-timeout, default
// 5 s) sets memberlist's SWIM knobs: a probe interval of budget/12, a
// suspicion multiplier of 4 and a maximum suspicion timeout of twice that,
// so a failed node is declared dead within the budget (about 2.4 s with
// the default in a three-node loopback cluster; 2.1 s measured with a 2 s
// budget). In atoll the gateway runs one member per node, joined through
// the gossip addresses the GCS lists; the node id is the memberlist name,
// the raylet's address and resources are the metadata.
//
// # Security and partitions
//
// With Config.SecretKey (the cluster key's GossipKey) every packet is
// encrypted and authenticated with AES-256-GCM, incoming and outgoing
// (GossipVerifyIncoming/Outgoing): a member without the key cannot join,
// read the membership or suspect a node. memberlist encrypts a stream's
// messages but reads a stream's length before it can check anything, so
// with a key the TCP streams are guarded too (guard.go): each one first
// passes a mutual HMAC challenge-response on a key derived from the
// gossip key (package preauth's Protocol, 3 s at most), waiting in a
// preauth.Gate (64 pending, 16 per address) meanwhile; memberlist sees
// only streams that passed. A stranger's connection announcing a huge
// message costs the node nothing. Packets (UDP) need no guard: each is
// one datagram, decrypted whole. With Config.Partition the
// network transport is wrapped by partition.Transport, so a fault plan's
// cut drops gossip packets in its direction and refuses streams.
//
// # Locks
//
// Member.mu guards the local metadata, the leaving flag and shutdown;
// delegates.mu the subscribers and the metadata memberlist reads; each
// subscriber's queue has a mutex of its own. Member.mu may take
// delegates.mu briefly, never the reverse, and none is held across I/O.
package membership
