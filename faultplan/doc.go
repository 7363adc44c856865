// Package faultplan reads seeded fault plans: rules that drop, delay or
// duplicate messages between a node's actors (addressed by the receiving
// actor's kind and the message's type), fail the store's next creations,
// kill a node, kill the worker process of a task at a point of its run,
// or make a node's spill disk full or slow, at times or with
// probabilities that all derive from one seed. The same plan and seed replay the same fault decisions on the
// same workload: rule i draws from its own generator, seeded from (seed,
// i), so one rule's decisions do not shift another's.
//
// A plan is YAML (or JSON):
//
//	seed: 42
//	rules:
//	  - name: lossy-results          # names the rule in the fault log
//	    action: duplicate            # drop | delay | duplicate
//	    message: TaskResult          # protobuf name (or its last part); "*" every message
//	    actor: owner                 # the receiving actor's kind (raylet, gcs, objectstore, gateway, owner, amm); "" any
//	    node: all                    # which nodes install it: all | head | driver | workers
//	    probability: 0.3             # of faulting each matched message (default 1)
//	    count: 10                    # at most this many faults (default: no limit)
//	  - action: delay
//	    message: CreateObjectRequest
//	    delay: 20ms
//	  - action: fail-creates         # timed: the driver's store fails its next `count` creations
//	    at: 2s
//	    count: 3
//	  - action: kill-node            # timed: a random live node (not the head, not a driver's)
//	    at: 5s
//	    every: 10s
//	    times: 2
//	  - action: partition            # timed: cut a random live node (as kill-node picks) off the others
//	    at: 3s
//	    for: 8s                      # then it heals by itself
//	    direction: both              # both | inbound | outbound (one-way: gossip packets; TCP breaks both ways)
//
//	  - action: kill-worker          # at a point: SIGKILL the worker process of a task
//	    point: before-execute        # before-execute | after-execute
//	    task: sort.map               # function, "Type.Method" or task name; "" or "*" any
//	    probability: 0.2
//	    count: 3
//	    node: workers
//	  - action: spill-full           # spill writes fail with ENOSPC (DiskFullError)...
//	    count: 5                     # ...the next 5 of them (default: every one)
//	    at: 1s                       # from 1s after the node started (default 0)
//	    for: 10s                     # for 10s (default: no end)
//	  - action: spill-slow           # each spill write and restore read waits delay first
//	    delay: 50ms
//
// A partition cuts the node's NATS connection, object transfers and
// gossip (internal/partition). Cut for longer than the failure timeout,
// the node is declared dead, its work retried elsewhere; once healed it
// reconnects, learns it is dead and stops: it does not come back as
// itself, and nothing it concluded while alone (it declares every other
// node dead) reaches the GCS, where only the head records deaths.
//
// Message rules run in the actors.FaultInjector of each node that
// installs them: atoll.WithFaultPlan on the driver's node, and on node
// processes the plan file named by EnvPlan. Timed rules run in the
// driver (atoll.WithFaultPlan). Rules at points (kill-worker, spill-full,
// spill-slow; Plan.Points) go where the plans' message rules go, by node
// role, into the node's hooks (internal/node.Hooks.FaultPoints):
//
//   - kill-worker: the raylet asks before it sends a task attempt or an
//     actor call to the worker that runs it (before-execute: it never
//     runs) and when the result comes back, before reporting it
//     (after-execute: the task ran; return objects it put in the store
//     stay, and its retry finds them there). A hit SIGKILLs a worker
//     process, or closes an in-process worker's connection (its runtime
//     ends; the task's goroutine sees its context cancelled); the runtime
//     handles the death as any other (the task is retried within
//     MaxRetries, else WorkerCrashedError; the actor restarts within
//     MaxRestarts and the call is retried within MaxTaskRetries). Actor
//     constructors are not points.
//   - spill-full and spill-slow: the store's spiller asks before each
//     spill file it writes (spill-write) and each restore it reads
//     (spill-read; spill-slow only). A failed write leaves its objects in
//     memory and the store backs off (100 ms doubling) before spilling
//     again; a creation that needs the room waits for it, or fails with
//     ObjectStoreFullError at its deadline.
//
// Each point suffers at most one fault: the first rule, in plan order,
// that applies. Every fault is recorded in a fault log (actors.FaultEvent,
// with Point and Task for faults at points; atolltest.FaultLog); a killed
// worker is also an OpenTelemetry span event SpanEvent ("atoll.fault",
// attributes atoll.fault.rule, atoll.fault.action, atoll.fault.point) on
// a "fault <task>" span under the task's submit span. So is a message
// fault whose message carries a task (a submission, a forward, a push to
// a worker, a forwarded actor call; point "message <type>@<actor kind>";
// internal/node's traceMessageFaults). Spill faults have no span event:
// the spiller does not know which task's object it writes; nor do message
// faults on messages that carry no task.
//
// Message rules decide under their injector's lock, and only for messages
// whose actor kind and type they match, so the same sequence of matched
// messages gets the same decisions. Timed rules run on goroutines of the
// driver (Run, one per rule), stopped by the driver's Shutdown; the
// driver keeps its last 4,096 timed events.
//
// # Partitions
//
// A partition rule, or atolltest.PartitionNode, cuts one node off the
// others for a duration (at most 10 minutes); never the head, whose NATS
// server is in its process. Each clustered node that dials its NATS server
// makes one partition.Switch at start and puts it on every path to other
// nodes: its NATS connection, its transfer client and server, and its
// gossip transport.
//
//	driver (timed rule or PartitionNode)         victim node
//	GCS ListNodes -> pick a victim (seeded)
//	PartitionRequest -- <prefix>.node.<id>.partition --> gateway: validate (not the head,
//	                                                     0 < d <= 10 min, direction),
//	<-------------------- PartitionReply ---------------- reply, flush, Switch.Cut
//	                                                     Cut: open TCP connections closed
//	                                                     (NATS, transfers, gossip streams),
//	                                                     new dials and accepts refused,
//	                                                     gossip packets dropped in the
//	                                                     cut's direction; a timer heals it
//
// While cut, nats.go reconnects every 250 ms and fails; what the node
// publishes meanwhile waits in nats.go's reconnect buffer. The others
// declare it dead within the failure timeout, the head marks it dead in the
// GCS, and every gateway fails the work it had sent there (retried
// elsewhere) and drops its later results. The cut node declares every
// other node dead in turn, but only the head writes deaths to the GCS, so
// when the heal flushes the reconnect buffer its stale reports reach no one
// who acts on them. Healed, the node registers again, the GCS answers
// NODE_DIED, and the node process logs it and exits with status 1: it never
// comes back under its id. A cut shorter than the failure timeout goes
// unnoticed beyond a burst of reconnects. Partitions isolate one node from
// all the others (not an arbitrary split into groups), and one-way cuts
// are one-way for gossip packets only. Tests: atolltest's partition tests
// (TestPartitionHeals: every result once, none from the cut node, and the
// GCS, the survivors' gateways and the scheduler agree) and
// internal/cluster/membership's TestPartitionedMemberDeclaredDead.
package faultplan
