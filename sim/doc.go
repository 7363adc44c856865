// Package sim is atoll's deterministic simulator: a whole cluster in one
// process, one goroutine at a time, on a simulated clock, network and
// disk, every delivery order, timer, disk outcome and scheduling choice
// drawn from one seed, so that a failing run replays exactly (the same
// seed and schedule of faults, on the same commit, give the same event
// log, whose hash a Result carries).
//
// # What runs
//
// Each node has the production cores — raylet.Core, cluster.Forwarder,
// objectstore.Store (a spilling one, its disk simulated) — and shells
// modelled after the real ones; each actor host a workerproto.HostCore;
// the head the GCS (a model with internal/gcs's rules) and the Active
// Memory Manager (amm.Run's policies). Every process — the driver, each
// pool worker, each actor's — is a real runtime.Runtime over the
// simulator's link, store client and GCS client, so tasks and actors run
// your registered functions through the SDK's own executor, borrowing,
// lineage and owner table. A workload is a function written against the
// SDK (Workload); Run runs it on a fresh cluster, Seeds on many in
// parallel, and atoll.WithSimulation runs a program's main on one
// (StartProgram: Init starts the run, Shutdown ends it).
//
//	res := sim.Run(sim.Config{Seed: 7, Nodes: 5}, func(ctx context.Context) error {
//		v, err := atoll.Get(ctx, square.Remote(ctx, atoll.Value(7)))
//		...
//	})
//	fmt.Println(res) // seed 7: PASS (4 faults, 8070 events, hash 81ea..., sim 58s, wall 230ms)
//
// # Threads and time
//
// Code that may block — the workload, each task attempt and actor call, a
// pull — runs on a thread: a goroutine that runs only when the simulator's
// loop resumes it, until it parks (every blocking select of the runtime
// first asks the simulator to park it: runtime.SimEnv.Park) or ends. A
// parked thread's condition is checked after each event, and it resumes
// after a jitter drawn from the seed. Sleep and Now give a thread the
// simulated clock (its node's, skewed by faults).
//
// # Faults
//
// A run's faults are a schedule (Fault, Generate, FormatSchedule,
// ParseSchedule): drawn from the seed (FaultConfig: swarm testing, a
// random subset of the actions), given (Config.Schedule), or from a fault
// plan (FromPlan). Partitions into groups and one-way cuts that heal;
// node crashes, replaced with or without their disk; worker and actor
// processes killed mid-task or at points of an attempt; messages dropped,
// duplicated or delayed (the ones the runtime claims to survive); spill
// disks full, slow or failing; clocks jumping; stores refusing creations.
// Each fault draws from a generator of its own, so a shrink that removes
// one leaves the others' draws alone.
//
// # Checkers
//
// Continuously: no attempt runs twice; no loop runs away (a thread that
// never waits, or a run past two million events); each task finishes at its owner
// once per run of it (a lineage rebuild is another); each caller's calls
// start on an actor in sequence order; no store serves an object its
// owner freed. At the end, once every fault healed and the cluster went
// quiet: the workload returned within Config.Deadline with typed errors
// only (a driver off the head whose node was declared dead and exited
// with it fails as driver-lost, at once: draws keep its node with the
// head's side of a partition and its cuts from the head under the
// failure budget); with Config.Released, the driver owns nothing; then, the driver
// gone, every store is empty, every owner owns nothing, every raylet is
// idle; then the Config.Checkers judge the History the workload recorded
// (Linearizable: porcupine against a sequential Model).
//
// # Replay and shrink
//
// A Result names its seed, schedule and hash; Replay is the command that
// runs it again, and Config.Log and Config.Spans write its event log and
// its OpenTelemetry spans (counted ids, simulated timestamps). Shrink
// removes faults while the run still fails the same checker. Main is a
// command line over named workloads (atoll sim).
//
// # Limits
//
// Not simulated: SDK calls from goroutines the program starts, real time
// and real I/O in tasks; an actor's calls run one at a time; refs are
// dropped by Release (a pool worker's also at the end of each task), not
// by the garbage collector; the autoscaler (resource requests fail), and
// the GCS's store: placement groups live in the head's memory, and a
// crashed head takes them with it. The head and the driver's node
// (Config.DriverNode: the head unless set) never crash.
package sim
