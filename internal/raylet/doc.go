// Package raylet is the per-node manager: it queues tasks, accounts the
// node's resources (CPU, memory, custom), dispatches tasks to worker slots
// and hosts actors, each in a worker of its own under a supervisor that
// restarts it up to its max_restarts.
//
// # Core and shell
//
// The decisions are a state machine, Core (core*.go), in the style of
// owner.Table and etcd raft's Step/Ready: events go in as method calls
// that take the current time (Submit, Finished, Recalled, Cancel,
// Blocked, KillWorker, WorkerExited, PeerView, Drain, NodeGone,
// GeneratorAck, ActorStarted, ActorFailed, ActorTerminated, KillActor,
// TimerFired, PrepareBundles, CommitBundles, ReleaseBundles,
// PlacementGroupRemoved, and HostSpawned, which only records an
// address), and what
// the world must do comes out as Effects, in the order they happened
// (core_effects.go). The Core does no I/O, starts no goroutine, reads no
// clock and creates no context (internal/lint checks); its
// scheduling rules are the pure functions of policy.go (Pick,
// RootSlots, IdleToStop) and placement.go (Place). Scripted scenarios in
// testdata/core drive it (core_test.go).
//
// The Core owns every piece of decision state: the queues by scheduling
// class and their pending reasons; admission (the objects running and
// pipelined tasks read, their bytes counted once, capped at
// ArgsFraction of the store) and the running root tasks (withheld past
// Saturation × workers); the available resources, with the CPU blocked
// tasks lend; the workers as it sees them (idle since when, their lease
// to a class, the attempts pushed to each in order, recalls on their
// way); the early exits per binary (respawn backoff); the hosted actors'
// records (demand, restarts, whether the creation was answered, cause of
// death); the job binaries' users (the nodes of their tasks' owners); the
// peers' views, the SPREAD cursor and the tasks waiting for a
// node able to run them; the counters of State.
//
// The protoactor actor (raylet.go, shell.go) is the shell: it turns each
// message into one event, with time.Now(), then performs the effects
// until none is left. It owns what the Core must not touch: the workers'
// actors and Slots, the actor hosts and their supervisor strategy
// (supervisor.go), the attempts' contexts, timers, spans (the Core only
// adds events to the queue spans a TaskTracer starts), the timeline, the
// worker binaries' hashes (trust.go, injected as CoreConfig.CheckBinary)
// and the routing of borrow reports and actor state broadcasts to the
// processes of this node. The workers themselves are made through the
// Workers interface (package workerproto: a process, or a worker runtime
// in this process; the raylet cannot tell them apart). The effects:
//
//   - StartWorker / StopWorker: spawn a pool worker (Workers.TaskWorker);
//     stop one the Core forgot (reaped, evicted for
//     another binary, dead): clear its slot, stop its actor, tell the
//     store (Config.OnWorkerDeath).
//   - KillWorker: kill a worker; the shell steps WorkerExited for it at
//     once, saying whether its process had registered.
//   - Push: give attempts their contexts and hand them to a worker in one
//     write (Slot.assign).
//   - Recall: ask a worker to give an unstarted attempt back; the
//     answer comes back as Recalled.
//   - Cancel, Done, Returned: cancel an attempt's context (its task was
//     cancelled); an attempt ended (its context released, the timeline
//     records it); an attempt was given back (its context released).
//   - Reply: send a result to an owner's mailbox.
//   - ArmTimer: post TimerFired after a delay (reaping, respawn).
//   - Forward, CancelForwarded, AckGenerator, ForwardGeneratorAck,
//     KillRemoteActor: the ClusterConfig callbacks and the worker's
//     generator acks.
//   - SpawnHost, StopHost, CrashHost, HostGone, ReportActor: the actor
//     hosts' lives and the states reported to the GCS.
//
// # Leases: direct submission
//
// A process's owner may submit its leasable tasks (Leasable: root tasks,
// no object argument, not generators) through a Submitter instead of a
// SubmitTask message per task, as Ray's core worker does: the Core leases
// it workers for a scheduling class (RequestLease, Grant; core_lease.go)
// and its submitter writes the class's tasks straight to them, pipelined
// up to the depth, reading the results back on the same connections; the
// Core hears of their use in batches, one message per burst of results a
// connection reads (LeaseUse, the timeline's events). The submitter's
// decisions are a pure core too, SubmitCore (core_submitter.go, scripted
// in testdata/submit): which lease takes a task, when to ask for more
// (one request per depth's worth of backlog, one while tasks wait behind
// a running one), when to take tasks back (a lease's first task running
// long while another is empty; its task blocked in Get), when to give a
// lease back (its class has nothing for it past Linger; at once when the
// Core recalls it). The Core recalls a lease (RecallLease) while another
// class or another submitter waits for the resources, worker or root
// slot it holds, or consumers wait for memory while it runs root tasks;
// a task blocked in Get on a leased worker lends its CPU as any other
// (WorkerBlocked); a leased worker's death ends its lease (LeaseLost) and
// the submitter reports each task it had there crashed, exactly once
// (the slot arbitrates between a result, the death and a push racing
// it). What stays per task in the Core, and so on its path: tasks with
// object arguments (admission by argument bytes), generators, actor
// creations, tasks placed in a cluster, and every task of a process with
// a fault injector (its rules act on messages).
//
// # Placement-group bundles
//
// A placement group's bundles are reserved on the node by the head's
// placement manager in two phases (core_bundles.go; the shell takes them
// as BundleRequest): PrepareBundles takes their resources out of the
// available ones, all or none; CommitBundles turns them into the group's
// resources (CPU_group_<i>_<group>, CPU_group_<group>,
// bundle_group_<i>_<group>, bundle_group_<group>, after Ray), which the
// node's total then holds in place of the plain ones; ReleaseBundles
// gives them back and kills the actors and running tasks using them. A
// task or actor placed in a group (SchedulingStrategy PLACEMENT_GROUP)
// demands the group's resources instead of its own (BundleDemand), so
// that placement (Place, as DEFAULT) finds the nodes holding its bundle
// and what runs in a bundle never takes more than the bundle holds; one
// waits until its bundle is committed somewhere. A group's removal reaches
// every node (GroupRemoved): its waiting tasks fail Unschedulable, and so
// do later ones. State reports the bundles the node holds and the shapes
// of the work it cannot start (Demands) for the placement manager and the
// autoscaler.
//
// User code runs in the workers (package workerproto's Server, over the
// runtime's executor): the raylet knows nothing about functions, codecs or
// the object store.
package raylet
