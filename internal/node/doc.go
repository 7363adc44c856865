// Package node assembles an atoll node and holds the plumbing of node
// processes.
//
// A node is what runs work on one machine: the control plane connection
// (an embedded nats-server, or the cluster's NATS), the GCS where this node
// hosts it, the shared-memory arena and the object-store actor, the raylet
// with its worker processes, the actor reporter and, in a cluster, the
// gateway to the other nodes (load reports, forwarding, gossip membership,
// object transfer). Start builds one from a Config and Stop takes it down.
//
// Four kinds of node share that code (see Config): the embedded single
// node atoll.Init builds inside a driver, a cluster's head (`atoll start
// --head`), a node joining a head (`atoll start --address`), and the small
// CPU-less node a driver runs for itself when it joins a cluster. The root
// package atoll adds the driver (the owner of objects, tasks and actors)
// on top of a *Node; `atoll start` runs a Node alone.
//
// The package also holds what talks to a running cluster from outside:
// the cluster address file and its resolution (AddressFile,
// ResolveAddress, DialCluster), the ready-line protocol of node processes
// started through EnvNode (RunFromEnv, NodeReady), and the queries behind
// `atoll status|list|memory|timeline` (GetClusterStatus, ListNodes,
// ListActors, ListJobs, GetTimeline), which a head serving the web
// dashboard (Config.Dashboard, package dashboard) also answers it with
// on its own connection (dashboard.go), and the node's answer to log
// requests (logs.go: the end of Config.LogFile).
//
// Every cluster node (not a driver's) runs a job service (jobs.go): it
// receives driver binaries and working directories in chunks over NATS
// (jobfiles.go), runs submitted jobs' drivers as child processes and
// records them in the GCS, and serves reads of its logs from any offset
// (joblogs.go): its own, its jobs' and its worker processes', whose
// output it also streams to their jobs' drivers (workerlogs.go).
// SubmitJob, GetJob, StopJob, ReadLog and FollowLog are the client side
// (`atoll job`, `atoll logs`).
//
// A node publishes its figures as OpenTelemetry metrics (metrics.go) and,
// with Config.MetricsPort, serves them to Prometheus (prometheus.go); its
// transfers, spills and restores become timeline events and spans
// (activity.go).
package node
