// Package faultplan reads seeded fault plans: rules that drop, delay or
// duplicate messages between a node's actors (addressed by the receiving
// actor's kind and the message's type), fail the store's next creations,
// or kill a node, at times or with probabilities that all derive from one
// seed. The same plan and seed replay the same fault decisions on the
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
// driver (atoll.WithFaultPlan). Every fault is recorded in a fault log
// (actors.FaultEvent; atoll.FaultLog).
package faultplan
