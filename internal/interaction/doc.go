// Package interaction is a harness for multi-party scripted tests of
// atoll's cores, in the spirit of etcd raft's rafttest.InteractionEnv:
// one Env holds every party of a small cluster and the messages in
// flight between them, and a script (cockroachdb/datadriven, testdata/*.txt)
// steps time and delivers, drops, holds or duplicates messages, so that a
// failure story reads top to bottom with what every party did.
//
// # Parties
//
// Every node has a raylet (a raylet.Core), a gateway (a
// cluster.Forwarder) and an object store (an objectstore.Store); the
// first node added is the head, which also runs the GCS and the AMM.
// Processes are owners (one owner.Table each): drivers, the pool
// workers' processes and the actors' processes. The parties without a
// pure core on main are small models with the same messages, each
// documented where it lives: the pool worker's task slot (worker.go), the
// actor host and its supervisor (host.go), the GCS's actor and node tables
// (gcs.go), the transfers between stores (store.go) and the AMM's drain
// step (amm.go, over the pure amm package and cluster.BuildSnapshot).
//
// Each party's effects become messages addressed to other parties,
// queued in the Env and printed ("→ from → to kind ...") under what
// caused them; nothing is delivered until a command says so. Effects
// their shells carry out synchronously (starting a worker, a raylet's
// PeerView, a store's disconnect of a dead client) are applied at once
// and printed. Time is one simulated clock that only `tick` moves; ids
// are fixed per name; nothing runs on a goroutine, so a script's output
// is the same on every run.
//
// # Commands
//
//	add-node n1 [cpu=N] [workers=N] [max=N] [depth=N] [store=SIZE]
//	add-driver d1 node=n1
//	gossip                      one round of load reports (placement views)
//	put d1 o1 [size=SIZE] | release d1 o1
//	submit d1 t1 [cpu=N] [retries=N] [returns=N] [args=o1,...] [holds=o1,...] [affinity=n2]
//	create-actor d1 a1 [max-restarts=N] [cpu=N]
//	call d1 a1 c1 [retries=N] [holds=o1,...]
//	cancel d1 t1
//	finish t1 [error] [stored[=SIZE]] [keep=o1,...]   the worker or host running t1 ends it
//	crash <node|worker|actor|driver> [reason=...]
//	deliver|drop|hold|release-held|duplicate [from=P] [to=P] [node=N] [kind=K] [task=T] [n=N]
//	stabilize                   deliver until nothing can be delivered
//	partition n2 [n3...] | heal
//	tick DURATION               timers, membership verdicts, lease ticks, in time order
//	drain n2 | amm-round | where o1 | net | state [party ...]
//
// Names: n* nodes (n1.gw, n1.store, n1.w1 its parties), d* drivers, a*
// actors, t*/c* tasks and calls, t1#0 an attempt, t1.0 a task's first
// return, other object names puts.
//
// # Invariants
//
// After every command the Env checks what must hold across parties
// (invariants.go): at most once (no attempt runs twice, no owner hears
// two results of one attempt or sees a task finish twice), nothing lost
// (every attempt an owner waits for is held by one raylet, a host, a
// gateway that forwarded it, or a message in flight), borrowed objects
// still owned, no read after free, and, at quiescence, stores and owners
// agreeing (no leak, nothing freed early, nothing a drain lost). A broken
// invariant fails the command.
//
// # Scripts
//
// testdata holds one failure story per file: a worker's death in the
// middle of a pipeline (worker_death.txt), the death of the node running
// a forwarded task (node_death.txt), actor restarts (actor_restart.txt),
// a borrower's death (borrower_death.txt), a recall racing a finish
// (lease_recall.txt), a drain racing pulls (drain_pull.txt), a duplicated
// forward (duplicate_forward.txt) and a duplicated submission
// (duplicate_submit.txt). go test ./internal/interaction -rewrite
// regenerates their expectations.
package interaction
