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
//     when the owner frees an object.
//
// Object bytes never travel over NATS. Message bodies are atollpb protobufs.
package cluster
