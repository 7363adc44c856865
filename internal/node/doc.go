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
//
// # Actors and supervision
//
// Start spawns from the root context of one actor system: "gcs" (where
// the node runs it) and "objectstore" under actors.RestartForever (their
// state survives a restart: the GCS reloads from KV, the store's state
// lives outside the actor instance), "actor-reporter" (writes the raylet's
// actor state changes to the GCS, in order), "raylet" under
// actors.StopOnFailure (its state lives in the instance: a failure stops
// it and fails the node over, failStop, rather than restarting it with
// amnesia), then, in a cluster, the gateway (once the raylet runs: the
// gateway sends to the raylet), the job service on every cluster node
// but a driver's, and "amm" on the head. A driver spawns its owner actor with SpawnNamed; Stop stops
// those first, then the rest in reverse order.
//
// # The control plane
//
// The embedded nats-server (package natsembed) runs with JetStream. On an
// embedded single node it has no TCP listener (clients connect in
// process) and its store lives in the session directory; on a head it
// listens on NodeIP:Port for the other nodes and drivers (or the head
// uses an existing server, Config.NATSURL), and its store lives in the
// head's GCS directory (gcsdir.go: Config.GCSDir, by default
// StateDir()/gcs, 0700, this user's only), which outlives the head. The
// head holds a flock on gcs.lock there while it runs (lockfile.Hold: the
// file is never removed, so two heads always contend for the same inode),
// and a second head on the directory fails to start rather than share the
// store. Trace context travels in NATS headers (W3C); NATS callbacks never
// touch state, they copy the message to an actor.
//
// A clustered node that dials its NATS server (not the head, whose server
// is in process) makes one partition.Switch at start (controlplane.go) and
// hands it to the paths that reach other nodes: nats.go dials through it,
// the transfer client and server dial and admit through it, and
// membership wraps its gossip transport with it.
//
// # A restarted head
//
// The GCS keeps its tables in JetStream KV, which outlives the head, so a
// head killed (or stopped) and started again on the same port and
// directory reloads nodes, actors and jobs (the root's head_restart_test.go).
// The cluster's NATS clients reconnect by themselves (MaxReconnects(-1),
// 250 ms apart), and then (rejoin.go):
//
//   - every clustered node registers again: the reconnect handler wakes a
//     goroutine that calls cluster.Gateway.Reregister, retrying with
//     backoff. reregister_node makes it alive in a GCS that lost or never
//     had its entry, keeps a known entry's start time, and refuses a node
//     it lists dead with NODE_DIED, on which the node closes DeclaredDead
//     and its process exits, as when it hears of its own death;
//   - loading marks no node dead, and the new head's gossip only declares
//     dead the members it heard from, so nothing declares a live node dead
//     at a restart; but nodes that died while the head was down stay listed
//     alive. So the head, once every live node had the time to reconnect
//     and report (three failure timeouts, at least 10 s), marks dead the
//     nodes its GCS lists alive that it has not heard a load report from
//     (cluster.Gateway.ReconcileNodes). A live node that took longer than
//     that to reconnect is marked dead too, learns it when it registers
//     again and exits. The head repeats the check every grace for as long
//     as it runs: a registration never followed by a load report expires
//     (marked dead, "registered but never heard from"). Each check also
//     marks dead again the nodes the GCS lists dead whose actors it still
//     lists there (their writes failed when the node died); the GCS finds
//     those actors itself, so the reply stays small.
//
// Not recovered: the jobs of drivers that died while the head was down
// stay listed as running (a job records its driver's owner address, not
// its node), and the AMM's tracked replica counts and drains (in the
// head's memory).
//
// # Death of a node
//
// A node learns from the GCS's node event for its own id that the cluster
// declared it dead (partitioned, paused or starved past the failure
// timeout); a part of it that fails for good (the raylet) does the same
// through failStop. Either way DeclaredDead closes, with DeadReason: a
// node process (`atoll start`, RunFromEnv) logs why, stops and exits with
// status 1 rather than run on unused, and a driver fails its pending and
// later tasks with NodeDiedError (internal/runtime's dead.go). A drained
// node that was told to leave closes Drained and exits with status 0.
//
// # Session directory
//
// A node without Config.SessionDir makes its own session directory in the
// temp directory and holds a flock on session.lock in it while it lives
// (session.go). A node that died without stopping leaves the directory
// behind with its lock dropped by the kernel: the next node to start on
// the machine (every atoll.Init starts one) removes it, logged with its
// size. Per-user state (the cluster address, the secret, the GCS
// directory) lives in $TMPDIR/atoll-<uid>, 0700 (nodeconfig's paths.go).
//
// # Worker output and logs
//
// On a cluster node (not a driver's) every worker process gets two pipes
// (stdout, stderr) into a workerLog (workerlogs.go), which appends them to
// <session>/logs/worker-<id>.log (at most MaxWorkerLogBytes, 64 MiB, the
// excess counted and noted; the last 1024 workers' files are kept),
// copies them to the node's own output, and cuts complete lines (at most
// MaxOutputLine, 16 KiB) that it publishes, batched per write (at most
// 64 KiB), as atollpb.WorkerOutput on <prefix>.output.<job id>. The job is
// that of the task the worker runs, or ran last (raylet.Slot.Current: a
// task's last lines may come out of the pipe after its result came in); an
// actor process's is its actor's. A driver in a cluster subscribes to its
// own job's subject (internal/runtime's output.go) and prints the lines as
// "(name pid=N, node=ID) line"; delivery is asynchronous, so a driver that
// exits right after its last Get may miss its tasks' last lines (the node
// keeps them).
//
// Every cluster node answers <prefix>.node.<id>.logs (logs.go; the reader
// role may ask) with the end of Config.LogFile (64 KiB by default, at most
// 1 MiB, starting after a line break), or an empty NodeLog without one.
// Requests are answered on the subscription's goroutine, one at a time;
// the subscription holds at most 16 pending requests and drops the rest.
//
// # Spans and timeline of the node's own work
//
// activity.go turns objects pulled from other nodes (cluster.Config.
// OnTransfer) and spill writes and restores (objectstore.Config.OnIO), with
// their measured start and end, into root spans ("pull", "spill",
// "restore") on the node's own tracer provider and into events of the
// raylet's timeline, where `atoll timeline` shows them as threads of their
// own. traceMessageFaults (faultplan.go) adds an "atoll.fault" span event
// for each message fault on a message that carries a task.
//
// # Goroutines and locks
//
// A clustered node runs, from Start to Stop, one goroutine that registers
// it again after each NATS reconnection and, on a head, one that waits out
// the rejoin grace once, reconciles and ends; per worker process, the two
// pipe-copy goroutines of os/exec write into its workerLog. Node.mu guards
// only the actors a driver spawned on the node and its actor-event
// subscriptions; workerLogs.mu the table of worker logs; each workerLog.mu
// one worker's file and unfinished lines (the publish happens after it is
// released). All are leaves, never held across I/O.
package node
