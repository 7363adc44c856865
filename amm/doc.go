// Package amm is atoll's Active Memory Manager, after Dask's: a routine on
// the head that every interval takes a snapshot of where the copies of
// objects are and how full each node's store is, asks a list of policies
// where data should be, and enacts their suggestions (drop the copy of an
// object on a node, create one on another) without ever compromising the
// data.
//
// This package is the pure half: the Snapshot, the Policy interface and
// the built-in policies (ReduceReplicas, Replicate, RetireNode,
// Rebalance), and Decide, the enactor's decision function, which filters
// suggestions against the guarantees (never the last copy, never the
// primary, never a copy pinned, being read or being pulled, never a copy
// that does not fit) and counts the ones it refuses. None of it does I/O,
// reads a clock or starts a goroutine; scenario tests script it in
// testdata/*.txt (go test ./amm -rewrite regenerates the expectations).
//
// # Policies
//
//   - ReduceReplicas drops the copies an object no longer needs: every copy
//     but its primary (or, with the primary gone, but one), beyond the
//     count Replicate tracks for it, most loaded nodes first.
//   - Replicate keeps a tracked object at its replica count (AllNodes: on
//     every node): the primary counts among the copies, a copy never goes
//     to a driver's node, and a lost copy is made again on the next round
//     as long as one copy lives.
//   - RetireNode, which runs first while a node drains: an object whose
//     every complete copy is on retiring nodes gets a copy on the least
//     loaded node that stays, and a copy on the retiring node that is not
//     the primary is dropped once one exists elsewhere.
//   - Rebalance (opt-in, with a threshold: "Rebalance:0.05") suggests
//     moves (ActionMove: a replica on the least loaded recipient, then the
//     drop of the sender's copy) from nodes above the mean use by more than
//     Threshold/2 to nodes below it by as much; drivers' and retiring nodes
//     take no part.
//
// A primary never moves: Rebalance and RetireNode move copies only.
// Decide accepts a move only if both halves pass (the source copy
// droppable, the replica fitting); a replica must fit under MaxFill
// (DefaultMaxFill 0.8) of the target's store and never goes to a retiring
// node. The enactor sends a move's source drop only once its replica was
// made, so a move whose replica is refused, deferred or failed leaves the
// source copy where it was (testdata/rebalance.txt, enact.txt).
//
// The actor that builds snapshots from the cluster and carries out the
// decisions, one round at a time, lives in internal/cluster (cluster.AMM,
// on the head); its package doc describes a round and a node's drain.
package amm
