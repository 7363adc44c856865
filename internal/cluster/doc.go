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
// Object bytes never travel over NATS. Message bodies are atollpb protobufs.
package cluster
