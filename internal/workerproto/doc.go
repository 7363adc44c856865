// Package workerproto is the worker protocol: both ends of the connection
// between a node's raylet and its workers, over either transport of
// package workerconn.
//
// HostCore (hostcore.go) is the pure state machine of an actor host: the
// per-caller order of actor calls, their windows per concurrency group,
// and what happens to the calls in flight when the actor's worker dies.
package workerproto
