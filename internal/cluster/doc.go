// Package cluster connects one node's raylet and object store to the other
// nodes of an atoll cluster.
//
// A node runs one gateway actor (Start) beside its raylet. The gateway
//
//   - publishes the node's load (resources, queue, store use) every
//     ReportInterval on the NATS subject <prefix>.load.<node> and turns
//     the other nodes' reports into raylet.PeerView messages, the view the
//     raylet places tasks with;
//   - forwards tasks and actor calls the raylet placed on another node to
//     that node's gateway (<prefix>.node.<node>.task / .call / .cancel),
//     which submits them locally and sends the results back
//     (<prefix>.node.<origin>.result); the origin delivers them to the
//     task's owner;
//   - runs the node's memberlist member (package membership): a node
//     declared dead within the failure budget leaves the view, its GCS
//     entry is marked dead, and every task or actor call forwarded to it
//     fails with NodeDiedError (owners retry tasks within their retries);
//   - serves the node's objects to other nodes over TCP (package remote)
//     and pulls remote objects into the local store on demand (Fetch):
//     one transfer per object per node, however many readers ask;
//   - broadcasts frees (<prefix>.free) so the copies other nodes pulled go
//     when the owner frees an object;
//   - keeps forwarded work alive with a lease: the node holding attempts
//     another node forwarded confirms them every ConfirmInterval
//     (<prefix>.node.<origin>.held, HeldWork), and the origin fails an
//     attempt unconfirmed for ForwardLease with FORWARD_LOST, so a task or
//     result lost on NATS (at most once) never hangs its owner, however
//     long the task runs;
//   - bounds its tables: dead nodes (MaxDeadNodes) and owners (gone when
//     their process exits, <prefix>.owners.exited, or their node dies;
//     MaxOwners); the sizes are served on <prefix>.node.<node>.stats.
//
// Every message read from NATS is decoded and its ids validated in the
// subscription callback; a bad one is logged and dropped.
//
// # Core and shell
//
// The forwarding decisions are a state machine, Forwarder (forward*.go,
// quota.go, generators.go, owners.go), in the style of owner.Table and
// etcd raft's Step: it holds the work sent to other nodes and their
// leases, the work other nodes sent here and its quotas, the peers' loads,
// the dead nodes, the owners of objects held here and the directory of
// copies. Events go in with Step, each stamped with the time it happened
// (SendTask, SendCall, CancelSent, LocalResult, NoHost, PassAck, Received
// for a validated message from another node, LeaseTick, PeerGone,
// OwnerExited, PublishFailed); the Effects come out in order with
// TakeEffects (Publish: kind and protobuf message to a node, or to every
// node; Deliver: a result to a local owner; Submit and PushCall: work to
// the raylet or an actor host; ToRaylet: views, node deaths, cancels and
// generator acks; ToStore; PeerHeard, PeerLost, PeerForgotten; ReportDead;
// Log). The Forwarder does no I/O, reads no clock and starts no goroutine,
// so tests hold several nodes' Forwarders and carry the messages between
// them themselves (forward_test.go, testdata/*.txt: deliver, drop,
// duplicate, tick, declare dead).
//
// The gateway actor (actor.go) is its shell: the raylet's forwards, the
// NATS callbacks' messages, membership events and its lease timer become
// events; it carries out each step's effects before its next message, and
// steps a Publish it could not send back in as PublishFailed when the
// effect asks for it. Gateway (gateway.go) starts the actor, the
// subscriptions, the load reports, gossip and object transfer around it.
//
// Object bytes never travel over NATS. Message bodies are atollpb protobufs.
package cluster
