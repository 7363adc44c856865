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
// The actor that builds snapshots from the cluster and carries out the
// decisions lives in package cluster (the head runs it).
package amm
