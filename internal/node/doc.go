// Package node assembles an atoll node from its settings
// (nodeconfig.Config) and takes it down again.
//
// A node is what runs work on one machine: the control plane connection
// (an embedded nats-server, or the cluster's NATS; controlplane.go), the
// GCS where this node hosts it, the shared-memory arena and the
// object-store actor, the raylet with its worker processes (workers.go)
// and their output (workerlogs.go), the actor reporter and, in a
// cluster, the gateway to the other nodes (load reports, forwarding,
// gossip membership, object transfer). Start builds one, in that order,
// and Stop takes it down in reverse; the Node in between owns every part
// and the session directory (session.go), a head's GCS directory and its
// lock (gcsdir.go), the resolved credentials (security.go), the
// reconnection to a restarted head (rejoin.go) and the node's own death
// (dead.go).
//
// Four kinds of node share that code (see nodeconfig.Config): the
// embedded single node atoll.Init builds inside a driver, a cluster's
// head (`atoll start --head`), a node joining a head (`atoll start
// --address`), and the small CPU-less node a driver runs for itself when
// it joins a cluster. The root package atoll adds the driver (the owner
// of objects, tasks and actors) on top of a *Node, plugging in its Hooks
// (StartWith); `atoll start`, node processes started through
// nodeconfig.EnvNode (RunFromEnv, the ready line of ready.go) and
// programs embedding a node (the public package node) run a Node alone.
//
// The assembly wires what other packages do, in a small file each:
// the job service (jobs.go, package jobs), the metrics (metrics.go,
// package nodemetrics), the head's web dashboard with the cluster
// queries behind it (dashboard.go, packages dashboard and
// clusterclient), the head's Active Memory Manager (amm.go,
// cluster.AMM), a fault plan's rules for the node's actors and worker
// processes (faultplan.go), the node's answer to log requests (logs.go:
// the end of Config.LogFile), and the timeline events and spans of its
// transfers, spills and restores (activity.go).
//
// It does not hold the settings (internal/nodeconfig: their defaults,
// validation, flags and environment), the queries a client asks a
// running cluster (internal/clusterclient), the job service
// (internal/jobs) or the metrics (internal/nodemetrics).
package node
