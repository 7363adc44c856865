// Package atolltest is what a program built on atoll imports to test
// itself, and to watch and steer a running cluster while it does: calls
// that break things on purpose the way real failures do (chaos), read
// what the cluster did, and drive the head's Active Memory Manager. Like
// net/http/httptest next to net/http, it works on the running atoll of
// the process (atoll.Init): the driver, or, for the calls a task may
// make, the task's own process.
//
// Breaking things:
//
//	atolltest.KillTaskWorker(ctx, ref)        // the worker running ref's task dies: the task retries
//	atolltest.KillWorker(ctx, workerID)       // a worker by id (atoll.CurrentWorkerID in a task)
//	atolltest.CrashActor(ctx, counter)        // the actor restarts within its MaxRestarts
//	atolltest.FailNextCreates(ctx, 3)         // the store refuses the next 3 creations: ObjectStoreFull
//	atolltest.KillNode(ctx, nodeID)           // a cluster node dies as if its machine failed
//	atolltest.PartitionNode(ctx, nodeID, faultplan.Both, 3*time.Second)
//
// Seeded fault plans (package faultplan) are installed with Init's
// options (atoll.WithFaultPlan, atoll.WithFaultInjector): they configure
// the node Init starts. GetFaultLog and GetClusterFaultLog report what
// the plans injected, in the driver's node and in every node of a
// cluster.
//
// Reading the cluster: Memory (the node's object store and this
// process's objects, tasks and lineage), Status (the driver's raylet:
// resources, queued and running tasks, workers) and SampleMemory (every
// node's store use over time, as Dask's MemorySampler, with its peak,
// CSV and SVG: package memsample).
//
// The Active Memory Manager on the head (package amm): GetAMMStatus,
// StartAMM and StopAMM turn its policies on and off; DrainNode empties a
// node of its objects and lets it leave. An object's replica count is an
// SDK call, atoll.SetReplicas.
//
// # Fault logs
//
// Each node's actors.FaultInjector (from atoll.WithFaultInjector,
// atoll.WithFaultPlan on a driver's node, or the plan file
// faultplan.EnvPlan names on a node process) owns that node's faults: a
// ring of the last actors.FaultLogCap (4,096) events numbered from 1
// (Seq), and counts by kind and by rule name (at most 1,024 names, the
// rest under "(other rules)") that cover every fault ever. The driver owns
// its plan's timed events. Nothing is copied elsewhere: a node killed with
// SIGKILL (a plan's kill-node) takes its log with it.
//
//	driver                                     node process (gateway, NATS callback)
//	+- own node: cluster.FaultLogOf(injector)
//	+- GCS ListNodes: the live nodes
//	+- per node, at once (5 s each):
//	     FaultLogRequest{after_seq} -- <prefix>.node.<id>.faults --> injector's snapshot
//	     <-- FaultLog{node_id, events, total, lost, more, counts} --+
//	     validated (cluster.RequestFaultLog); the next page while more
//	     (at most 8 pages a call)
//
// GetClusterFaultLog's since map (ClusterFaultLog.Seen of the previous
// call) asks only for newer events; Lost counts events the ring dropped
// before they were read; nodes that do not answer are listed in
// Unreachable. samples/chaos polls every 250 ms to keep a killed node's
// last reading.
//
// The calls that act on the node or the cluster (FailNextCreates,
// KillNode, PartitionNode, the fault logs, Status, SampleMemory, the AMM
// calls) are the driver's: from a task or an actor they fail with
// atoll.ErrInvalidArgument. KillTaskWorker, KillWorker, CrashActor and
// Memory work anywhere atoll runs. Before Init every call fails with
// atoll.ErrNotInitialized.
package atolltest
