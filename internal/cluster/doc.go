// Package cluster connects one node's raylet and object store to the other
// nodes of an atoll cluster.
//
// A node runs one gateway actor (Start) beside its raylet. The gateway
//
//   - publishes the node's load (resources, queue, store use) every
//     ReportInterval (100 ms) on the NATS subject <prefix>.load.<node> and
//     turns the other nodes' reports into raylet.PeerView messages, the
//     view the raylet places tasks with;
//   - forwards tasks and actor calls the raylet placed on another node to
//     that node's gateway (<prefix>.node.<node>.task / .call / .cancel),
//     which submits them locally and sends the results back
//     (<prefix>.node.<origin>.result); the origin delivers them to the
//     task's owner;
//   - runs the node's memberlist member (package membership): a node
//     declared dead within the failure budget leaves the view, its GCS
//     entry is marked dead, and every task or actor call forwarded to it
//     fails with NodeDiedError (owners retry tasks within their retries);
//   - serves the node's objects to other nodes over TCP (package remote)
//     and pulls remote objects into the local store on demand (Fetch):
//     one transfer per object per node, however many readers ask;
//   - broadcasts frees (<prefix>.free) so the copies other nodes pulled go
//     when the owner frees an object;
//   - keeps forwarded work alive with a lease (below), so a task or result
//     lost on NATS (at most once) never hangs its owner, however long the
//     task runs;
//   - bounds its tables: dead nodes (MaxDeadNodes) and owners (gone when
//     their process exits, <prefix>.owners.exited, or their node dies;
//     MaxOwners); the sizes are served on <prefix>.node.<node>.stats.
//
// On the head the same package runs the Active Memory Manager's actor
// (AMM, amm*.go) over the pure policies of package amm, and the drain of a
// node (drain.go). Every message read from NATS is decoded and its ids
// validated in the subscription callback (validate.go); a bad one is
// logged and dropped (FuzzGatewayMessages). Object bytes never travel over
// NATS. Message bodies are atollpb protobufs (cluster.proto).
//
// # Core and shell
//
// The forwarding decisions are a state machine, Forwarder (forward*.go,
// quota.go, generators.go, owners.go), in the style of owner.Table and
// etcd raft's Step. Step(now, event) applies one event; time is an input,
// never read. Events: SendTask (the raylet's forward; Relay when the raylet
// spilled back work forwarded here), SendCall, CancelSent, LocalResult (a
// result or generator item of work held here), NoHost (a dead letter),
// PassAck, Received (a validated message from another node: task, call,
// result, held, cancel, genack, load, owners exited, copies, frees),
// LeaseTick, PeerGone, OwnerExited, PublishFailed, ReportAnswered (the
// GCS's answer to a ReportDead). TakeEffects returns, in order:
//
//   - Publish{To, Kind, Msg, Unsent}: a protobuf to node To's
//     <prefix>.node.<To>.<Kind>, or to every node;
//   - Deliver{owner PID, result};
//   - Submit and PushCall: work to the raylet or an actor host, with the
//     gateway as sender;
//   - ToRaylet: peer views in node order, NodeGone, CancelTask, generator
//     acks; ToStore: ClientDisconnected of a dead owner;
//   - PeerHeard, PeerLost, PeerForgotten: the fetcher's addresses and
//     WaitPeers' set; ReportDead (head only: sent again, with a backoff,
//     while the GCS answers UNAVAILABLE; forward_report.go); Log.
//
// Messages too large for the server's max payload (SetMaxPayload) fail
// inside the core; a publish the shell could not send comes back as
// PublishFailed, and Unsent says what follows (fail the owner now, send the
// failure, fail the generator item, forget the owner locally). A copy of
// work arriving on the link the same attempt is already held on (a
// duplicated message) is dropped. Sweeps emit in a fixed order (task id,
// attempt; origin), so a run is reproducible.
//
// The gateway actor (actor.go) is its shell: the raylet's forwards, the
// NATS callbacks' validated bodies, membership events and its lease timer
// become events; it applies each step's effects before its next message (a
// failed publish's consequences first). Gateway (gateway.go) starts the
// actor, the subscriptions, the load reports, gossip and object transfer
// around it. The Forwarder does no I/O, reads no clock and starts no
// goroutine, so the scenarios in testdata/*.txt (forward_test.go) hold
// several nodes' Forwarders and carry the messages between them (deliver,
// drop, dup, tick, gone, unavailable); internal/interaction runs them
// beside the raylets, stores and owners.
//
// # The gateway's state
//
//	pending     work sent to another node, by (task id, attempt): the owner
//	            PID to deliver the result to, the target node, when that node
//	            last confirmed it holds the attempt, and the link's hops (a
//	            stack: a task spilling back and forth passes a gateway more
//	            than once, and its result retraces the chain)
//	inbound     work other nodes sent here, by (task id, attempt): the node to
//	            answer, for calls the host's address, the size of the spec,
//	            the link's hops; bounded per origin and in all (quota)
//	itemFailed  generator attempts running here one of whose items could not
//	            be sent back: the error their result is replaced with
//	ended       attempts sent from here that ended while they may run on:
//	            generators whose result came back (where late items go),
//	            attempts failed FORWARD_LOST (where a late result goes);
//	            the newest 1024
//	peers       every live peer's latest NodeLoad, turned into a
//	            raylet.PeerView on every report
//	dead        nodes that died or left, oldest first, at most MaxDeadNodes
//	            (1024): their late reports and copies are ignored
//	copies      for objects owned on this node: the other nodes that pulled
//	            a copy (a node leaves it when the AMM drops its copy)
//	owners      the node of every owner of objects held here, shared with the
//	            fetcher (its mutex is a leaf); at most MaxOwners (65536)
//	heard       live peers and the dead nodes still remembered (WaitPeers)
//
// # Limits
//
// Every table is bounded by live work or by a cap, so a node serving
// drivers for months stays flat (the root's longlived_test.go checks the
// head's tables, the GCS's and the heap after hundreds of jobs; 2,000 with
// ATOLL_LONG_JOBS=2000). dead keeps the last MaxDeadNodes (late messages of
// a dead node arrive within seconds; a driver a second fills it in 17
// minutes), and forgetting one also drops it from heard. owners entries go
// when the owner's node dies, and when the owner's process exits: the
// raylet's worker-death hook calls Gateway.OwnerExited, which broadcasts
// OwnersExited on <prefix>.owners.exited; every node forgets the owner and
// tells its store (ClientDisconnected) to free what it owned there. A lost
// notice leaves an entry until the node dies; past MaxOwners the oldest is
// evicted with a warning. Caps and lease settings come from Config, else
// the environment (ATOLL_GATEWAY_MAX_DEAD_NODES, ATOLL_GATEWAY_MAX_OWNERS,
// ATOLL_FORWARD_LEASE, ATOLL_FORWARD_CONFIRM_INTERVAL). A node answers
// <prefix>.node.<node>.stats with the sizes of its gateway's and raylet's
// tables and its Go heap (atollpb.NodeStats).
//
// One bounded growth remains in the heap, outside atoll: protoactor's
// process registry is 1,024 × 32 Go maps, created empty; a map gets its
// storage the first time a PID hashes to it and keeps it when emptied, so
// churn of unique PIDs touches new maps until all are: about 390 bytes a
// job at first, at most about 8.5 MiB.
//
// # Quotas on forwarded work
//
// The work other nodes forward to a node is state they grow (quota.go).
// The gateway accounts for inbound by origin node (the origin_node of the
// ForwardTask or ForwardActorCall) and in all, in attempts and in encoded
// bytes of their specs, and admits an arrival only while it keeps its
// origin under MaxForwardedPerOrigin (8192) attempts and
// MaxForwardedBytesPerOrigin (64 MiB), and the node under MaxForwarded
// (32,768) and MaxForwardedBytes (256 MiB) (Config, else
// ATOLL_FORWARD_MAX_PER_ORIGIN, ATOLL_FORWARD_MAX,
// ATOLL_FORWARD_MAX_BYTES_PER_ORIGIN, ATOLL_FORWARD_MAX_BYTES). What it does
// not admit it answers at once on the origin's result subject with
// RESOURCE_EXHAUSTED (errs.ResourceExhaustedError naming the node, the task
// and the quota), which the origin routes like any result: the owner fails
// the task or call, and owner.Retryable does not retry it. Refusals are
// counted (NodeStats.forwards_refused) and logged in one line per lease
// tick, by origin. Work leaves the account when its result goes back, and
// when its origin dies or leaves: the gateway then also tells the raylet to
// cancel the tasks it held for that origin (nobody will read their
// results, and a peer could otherwise fill a node, claim to leave and fill
// it again). Held actor calls of a dead origin are not cancelled. The quota
// counts everything held (queued, waiting, running, relayed on), so it is
// also the most ready tasks one driver can queue on one node; raise it on
// the nodes. The origin id is what a message claims: a peer can pose as
// many origins, which is why the overall bounds exist. An origin must
// also be a live member of the gossip (PeerJoined): one that never
// joined would never be declared dead, and its work would be held for
// ever. Work from a non-member is held on probation for StrangerGrace
// (ForwardLease by default, or EnvStrangerGrace), since a new node's
// first work can arrive before its join; at most DefaultMaxStrangers
// (64) origins at once. If it has not joined by then, its work is
// dropped (tasks cancelled in the raylet) and each attempt refused with
// PERMISSION_DENIED, and later work from it is refused at once until it
// joins; a node declared dead stays refused, unless gossip has it alive
// again and this node is not the head: a verdict of a node other than
// the head never reached the GCS, and the accused, alive, answers again
// (forward_members.go, testdata/strangers.txt, testdata/revive.txt). Measured
// (the root's forward_quota_test.go, TestForwardedWorkIsBounded: 10,000
// forwarded tasks no node can run, 8 KiB argument each, quotas 1,000 per
// origin and 1,500 in all): 1,000 held, 9,000 refused with the typed error,
// the node's live heap 3.9 → 13.4 MiB; with the quotas lifted,
// 4.1 → 96.9 MiB. A node's own local submissions are not bounded.
//
// # The forwarding lease
//
// Forwarded tasks, calls and results travel on core NATS, at most once; a
// task may legitimately run for hours, so the deadline is liveness-based.
// Every ConfirmInterval (1 s) a node sends each origin one HeldWork (on
// <prefix>.node.<origin>.held, at most 4096 attempts a message) listing the
// attempts of its inbound stacks: queued, running, or forwarded on. The
// origin renews the matching pending entries; on the same tick it fails
// the entries not renewed for ForwardLease with ForwardLostError
// (FORWARD_LOST: calls are marked actor_crashed so callers retry them
// within MaxTaskRetries, tasks are retried within MaxRetries). The default
// lease is twice the gossip's failure budget (10 s by default): a node that
// dies is declared dead first, so its work fails as NODE_DIED, and the
// lease only catches messages lost between live nodes: a task that never
// arrived, a result lost on its way back (the executing node stops
// confirming once it answered), a relay in a spillback chain (its own
// pending entry expires and the failure retraces the chain). An expired
// attempt may still have been only slow, and then runs on its node after
// its owner retried it, storing its returns there under the ids the
// retry's have: each gateway on the chain remembers the link it failed as
// lost (ended, the newest 1024), and a late result that stored something
// retraces the chain to the owner, whose record says which copy is a
// stray (it places the object elsewhere, or freed it); the owner frees
// that node's copy only, with a numbered notice naming the node
// (FreeObjects.stray_node). Other late results are dropped. A call forwarded to a host address
// with no actor behind it comes back as a protoactor dead letter (NoHost)
// and is answered with ActorDiedError at once. Not covered: a raylet that
// loses a task it accepted (its gateway keeps confirming it).
//
// # Generators across nodes
//
// A generator attempt placed on another node reaches the node that runs it
// over a chain of links, one per ForwardTask, each named by its hops (1
// from the owner's node, 2 for its first spillback, ...), recorded in the
// sender's pending entry and the receiver's inbound entry (generators.go).
// Items come back while the attempt runs, so they cannot pop the stacks
// as the result does; they travel by link:
//
//	worker -> raylet (Slot.DeliverItem) -> gateway (its owner there)
//	runner's gateway: newest inbound entry (link h) -> ForwardedResult{item, hops h}
//	                  on <prefix>.node.<origin>.result
//	a gateway on it:  pending entry of link h from that node -> its owner
//	                  ... or itself (relayed here) -> inbound entry of link h-1 -> on
//	owner -> GeneratorAck -> its raylet: runs the attempt? write it to the worker
//	                  else the gateway: pending entry of link 1 -> ForwardGeneratorAck{ack, hops 1}
//	                  on <prefix>.node.<node>.genack -> that raylet: runs it? else link 2 ...
//
// Items share the result's path (the same gateway actor, subject and
// publisher at every hop), so the owner sees them in order and before the
// end; an item leaves every entry in place and renews the lease of the
// entry it passes. Only a delay (a fault plan's) lets a result overtake an
// item: the late item goes where the result went (ended), and the
// owner frees what it stored. Any other item nobody waits for and an ack
// with no next link are dropped: the worker learns the count again from
// the ack to its next item, and a worker held back by backpressure sends
// the items the owner lacks again. Links are checked to lie in [1, 64]. An item larger than the
// server's max payload cannot go back: the running node's gateway cancels
// the attempt, drops its later items and answers its result with
// INVALID_ARGUMENT naming the item (itemFailed); relays resend the same
// bytes, so they cannot fail where the runner did not. The runner's node
// dying fails the attempt upstream (NODE_DIED, or FORWARD_LOST past the
// lease) and the owner retries it.
//
// # Subjects
//
// Every node's gateway subscribes to <prefix>.node.<its id>.<kind>
// (nodeSubject): task, call, result, held, cancel, genack and borrows
// (forwarding); copy, locate (the directory of copies); crash (KillNode
// fault injection: the node SIGKILLs itself after replying) and partition;
// timeline (the raylet's ring of its last 4096 finished attempts, for
// `atoll timeline`), stats, faults (a page of its fault log); objects,
// dropcopies, replicate, drain and leave (the AMM). The node itself answers
// logs (the end of its log file, internal/node), and its job service
// jobupload, jobsubmit, jobstop and logread (internal/jobs). Cluster
// wide: <prefix>.load.<node> (every 100 ms: total and available
// resources, queued CPU, the store's statistics, transfer address, pulls;
// `atoll status` and `atoll memory` read these), <prefix>.free (object ids
// whose owner freed them: every node deletes its copy and remembers the
// id), <prefix>.kill (kill an actor; only its host acts),
// <prefix>.owners.exited, <prefix>.amm.replicas|control|drain (the head's
// AMM) and <prefix>.output.<job> (workers' output for a job's driver).
// NATS callbacks only unmarshal and send to the gateway (or the store and
// raylet); the gateway's report goroutine asks the raylet and the store
// for their state with one long-lived collector actor and publishes the
// load.
//
// # Objects across nodes
//
// A stored value carries the id of the node holding its primary copy
// (ObjectLocation.node_id), and a task's ref arguments carry it too
// (ObjectRef.node_id, codec, size). Before a worker reads its arguments,
// and before a driver's Get, the objects held elsewhere are fetched: the
// worker asks its raylet (FetchObjects frame) and the node's fetcher
// (fetch.go) pulls each missing object with the node's remote.Puller
// straight into a freshly created object in its own arena, then seals it.
// The store is the node's copy-location directory: an object present (or
// being created by a concurrent pull, ErrObjectExists) is never pulled
// again, and concurrent pulls of one id share one transfer, so each node
// pulls an object once however many tasks read it. A node that pulled a
// copy announces it to the owner's node (<prefix>.node.<owner>.copy); the
// owner's gateway keeps the directory of copies (dropped on free and when
// a node dies) and answers <prefix>.node.<owner>.locate. A fetch of an
// object under 16 MiB tries the primary's node first; a larger one asks
// the owner's node for the copies and pulls from a random holder, so a
// broadcast fans out from the copies as they appear. Either way, if a
// holder is gone or its pull fails, the fetch asks for copies and tries
// the others: an object survives its primary's node while a copy lives. A
// copy is created owned by the object's owner (ObjectRef.owner_id), so it
// goes when the owner frees the object (the free is broadcast), when the
// driver exits (it broadcasts frees for everything it still owns), or when
// the owner's node dies. The fetcher refuses a peer that declares another
// size than the ref records, before allocating.
//
// # Node failures
//
// Memberlist declares a failed node dead within the failure budget
// (--failure-timeout, default 5 s). Every gateway then drops it from the
// view, fails the work pending on it with NodeDiedError (NODE_DIED,
// retried by owners like a worker crash), tells the raylet (NodeGone:
// actors whose owner lived there are killed, detached ones spared), frees
// the objects held here whose owners lived there, and the head's gateway
// marks it dead in the GCS, which marks the actors it hosted dead (or
// restarting) and publishes their events; while the GCS answers
// UNAVAILABLE (some of those writes failed) the head reports the death
// again, 1 s apart doubling to 30 s, at most 10 times, and the GCS
// updates the actors still listed there. Only the head writes deaths to
// the GCS, so what a
// node cut off from the others concludes (every other node dead) never
// reaches it. A node that stops gracefully publishes a last load report
// with leaving and leaves the gossip. After a NATS reconnection a node
// registers again (Gateway.Reregister; a GCS that lists it dead answers
// NODE_DIED and the node stops), and a restarted head marks dead the nodes
// its GCS lists alive but that it has not heard from, and again the nodes
// it lists dead whose actors it still lists there, going on past a node
// it fails to mark (ReconcileNodes, every grace): see internal/node.
//
// # Active Memory Manager
//
// A pulled copy stays while its object lives; the AMM (after Dask's)
// removes the copies no longer needed and creates the ones a tracked
// replica count asks for. Its policies are opt-in (ATOLL_AMM=1 or
// nodeconfig.Config.AMM on the head, or `atoll amm start` /
// atolltest.StartAMM on a running cluster; interval ATOLL_AMM_INTERVAL /
// AMMInterval, default 2 s; policies in order ATOLL_AMM_POLICIES /
// AMMPolicies, e.g. "Replicate,Rebalance:0.05", parsed by
// ParseAMMPolicies; default Replicate then ReduceReplicas). Package amm is
// the pure half (Snapshot, the policies, Decide); AMM is the actor that
// feeds it and carries out its decisions, spawned as "amm" on the head
// after the gateway. It is always spawned; stopped (AMMControl on
// <prefix>.amm.control), a tick starts no round unless a drain is under
// way, and a round then runs RetireNode alone.
//
// A store marks the objects a pull created as copies
// (objectstore.Client.CreateCopy); every other object is a primary. One
// round:
//
//  1. A tick (time.AfterFunc, armed when the previous round ended, so
//     rounds never overlap) starts a gathering goroutine: it lists the live
//     nodes from the GCS and asks each, concurrently, on
//     <prefix>.node.<node>.objects for its inventory (Store.Inventory: at
//     most 4096 objects, largest first, each with size, copy, pinned, read
//     within the grace, sealed, owner), to which the gateway adds each
//     object's owner node (NodeObjects). Replies are validated; a node that
//     does not answer within 2 s is left out, which only makes the round
//     drop less. BuildSnapshot makes the snapshot, with the tracked replica
//     counts and, per object, what a node needs to pull it.
//  2. The actor runs the policies and amm.Decide over it: the enactor's
//     guarantees are checked there and refusals counted by reason.
//  3. An enacting goroutine carries out the accepted replicas (and the
//     replicas of accepted moves), then the drops (and the source drops of
//     the moves whose replica was made). A replica is a ReplicateRequest on
//     <prefix>.node.<target>.replicate (the object, its owner, a complete
//     copy to pull from, a timeout of 30 s); at most 32 a round (the rest
//     are deferred to the next snapshot), four in flight. The target's
//     gateway validates it, runs at most four replications at once (more
//     are answered busy) and pulls with its fetcher, as for a task's
//     argument: the store admits the copy (a full store refuses it: no-fit)
//     and the node announces it to the owner's node. Then each node gets
//     its accepted drops (DropCopiesRequest on
//     <prefix>.node.<node>.dropcopies, at most 4096 ids); the store checks
//     again (Store.DropCopies) and answers which it dropped, the others
//     count as stale. For each copy dropped the AMM publishes
//     ObjectCopies{dropped} to the owner's node, whose directory forgets
//     it. The result goes back to the actor, which arms the next tick.
//
// Tracked replica counts come from drivers: atoll.SetReplicas sends a
// SetReplicas request on <prefix>.amm.replicas (no AMM: no responders,
// ErrUnavailable). The counts live in AMM (at most 65,536 objects; a count
// at most 1,024 or amm.AllNodes), survive the actor's restarts but not the
// head's, and a count is forgotten when a round in which every node
// answered in full finds the object on no node. Node requests are served on
// a goroutine each, at most two at once per node (more are dropped: the
// AMM's request times out and the next round asks again). The actor is
// supervised by actors.RestartForever; its counters, switch, tracked counts
// and drains live in AMM, outside the actor instance (AMM.mu, a leaf), and
// a round in flight reports to the same PID. Known gap: a replication
// holds no reference to its object, so an object freed while a node pulls
// it for the AMM can leave that copy behind until its owner exits. Tests:
// the root's TestAMMReplicate and TestAMMRebalance.
//
// # Draining a node
//
// `atoll drain NODE` and atolltest.DrainNode (Ray's node drain, Dask's
// retire_workers) send a DrainRequest on <prefix>.amm.drain to the head's
// AMM, which checks the node in the GCS (alive, not the head, not a
// driver's: typed errors) and asks it to drain (<prefix>.node.<node>.drain).
// The node's gateway sets its draining flag and sends raylet.Drain (with
// if_idle, the autoscaler's, the raylet first checks it queues, runs and
// hosts nothing and holds no bundle, in the same step; a busy node
// refuses, DrainReply.busy says why, and nothing changes): from
// then on the raylet places every task submitted or forwarded to it on
// another node (it stays only if no other node can run it, or a hard
// affinity names it), while what it queued or runs finishes there. Its
// load reports carry draining, so the other gateways leave it out of the
// views they give their raylets. Its inventories carry draining (and its
// raylet's queued and running tasks); BuildSnapshot marks it retiring, and
// each round runs RetireNode first: an object whose every complete copy is
// on retiring nodes gets a copy on the least loaded node that stays, and a
// non-primary copy on the retiring node is dropped once one exists
// elsewhere. After each round, drainStep reports progress and, when every
// object of the node had a complete copy on a staying node and its raylet
// was idle, asks it to leave (LeaveRequest on <prefix>.node.<node>.leave,
// listing those objects, at most 8,192). The node checks again and either
// answers why it stays (the next round asks again) or closes
// Gateway.Left: the node process stops as on SIGTERM and exits with
// status 0. Its primaries go with it; readers find the copies through the
// owner's directory of copies, as for a dead node's objects. The AMM keeps
// the last 16 finished drains for its status. Actors it hosts are not
// moved: they die with the node and restart elsewhere within their max
// restarts. Tests: the root's TestDrainNodeMidSort; internal/interaction's
// drain_pull.txt.
//
// # Fault logs and partitions
//
// A node serves its fault injector's log on <prefix>.node.<node>.faults
// (serveFaults, FaultLogOf) in the NATS callback: a lock and a copy of at
// most a page (MaxFaultEventsPerReply, 1024 events; names cut to
// MaxFaultNameBytes), halving the page until it fits the max payload.
// RequestFaultLog reads one page and validates it (from that node, seqs
// increasing after the one asked and within the total, known kinds,
// counts adding up). atolltest.GetClusterFaultLog pages through every
// node. A node takes a PartitionRequest on <prefix>.node.<node>.partition
// (servePartition: not the head, 0 < duration ≤ 10 minutes, a known
// direction), replies, flushes, then cuts itself off with its
// partition.Switch; Gateway.KillNode and PartitionNode read the head's
// fault_injection flag from the GCS first and fail with
// ErrPermissionDenied when it is off.
//
// # Locks
//
// The fetcher's mu guards only its table of peer transfer addresses,
// peerSet.mu the set of nodes heard from, owners.mu the owner → node map
// and its eviction order, AMM.mu the AMM's counters, switch, tracked
// counts and drains: all leaves, none held across I/O. Everything else
// belongs to the gateway and AMM actors.
package cluster
