// Package gcs is atoll's global control store: the cluster-wide tables of
// nodes, actors and jobs, served over NATS and stored in JetStream KV.
//
// # Server
//
// The GCS is one supervised protoactor-go actor (NewProps). On start it
// creates (or opens) the KV buckets <prefix>_nodes, <prefix>_actors and
// <prefix>_jobs, loads every entry into memory (this is how a restarted GCS,
// or a GCS on a restarted nats-server, recovers its state), and subscribes
// in queue group "gcs" to <prefix>.gcs.v1, where requests are GcsRequest
// protos and replies GcsReply protos. If JetStream is not reachable yet it
// retries with a growing backoff instead of failing.
//
// The actor owns all state. The NATS callback copies each request into an
// actor message and returns; the actor validates the request against its
// tables, writes the new entry through to KV, and only then changes memory,
// publishes the entry on <prefix>.events.node or <prefix>.events.actor, and
// replies. A failed write leaves memory unchanged and returns UNAVAILABLE.
// On stop (or restart) the actor drains its subscription so that a new
// instance receives every later request; a request in flight at that
// moment gets no reply and its caller a timeout.
//
// # Semantics
//
//   - register_node upserts a node as NODE_ALIVE; mark_node_dead sets
//     NODE_DEAD and the end time and keeps the entry (up to the cap below),
//     then updates every live actor the node hosted: RESTARTING, with no
//     node or address and one restart more, if it has restarts left and its
//     owner's node lives; DEAD otherwise (with a NODE_DIED cause,
//     shortened like any cause that does not fit, below). A write that
//     fails does not stop the others (they share one request timeout); the
//     request then fails,
//     UNAVAILABLE if a retry may succeed (else with the first failure), and
//     marking the node dead again (its first end time and reason stand)
//     updates the actors still live there. The head reports a death again
//     while it gets UNAVAILABLE (internal/cluster, "Node failures"), and
//     its reconciliation asks for what deaths left
//     (list_actors with left_on_dead_nodes: the actors not DEAD whose
//     node is listed dead, and only those) and marks their nodes dead
//     again.
//     reregister_node is what a node sends when its NATS connection comes
//     back (the head may have restarted, and lost or never had its
//     entry): register_node, except that a node listed dead stays dead
//     and the request fails with NODE_DIED, so that a node the cluster
//     gave up on learns it and stops.
//   - register_actor refuses (INVALID_ARGUMENT, "already taken") a name
//     held by another live actor of the same namespace; registering the same
//     id again is an idempotent upsert. update_actor replaces a known
//     actor's entry; its name and namespace cannot change and a DEAD actor
//     stays dead. A DEAD actor frees its name but keeps its entry, so
//     get_actor still answers for it; get_named_actor finds live actors only.
//     An actor's state never fails to change for its death cause's size
//     (cause.go): a cause that would take the entry past
//     Config.MaxEntryBytes (a constructor's panic with its 64 KiB stack, a
//     node's death for an entry with little room left) is shortened first,
//     only as much as needed: the remote stack cut, the registered error
//     values dropped (last first), the message cut, the sentinel names
//     dropped, the task and type names cut, a cut field ending with
//     "… (truncated)" (the message too, when values or names are dropped);
//     then only the code is kept, then no cause. An entry that still does
//     not fit is too large for reasons of its own and refused, below.
//   - add_job upserts a job; finish_job marks it finished with its end time.
//   - Dead nodes, dead actors and finished jobs are kept up to a cap each
//     (Config.MaxDeadNodes, MaxDeadActors, MaxFinishedJobs; defaults
//     DefaultMaxDeadNodes 1000, DefaultMaxDeadActors 2000,
//     DefaultMaxFinishedJobs 1000; or the ATOLL_GCS_MAX_* environment
//     variables). Past a cap the entry that died (or finished) first is
//     forgotten, in memory and in KV (its key is purged from the bucket's
//     stream, leaving no delete marker), so a restarted GCS does not reload
//     it; a forgotten id is NOT_FOUND. Live entries are never forgotten.
//   - Live entries are bounded too (bounds.go): a new live node, actor or
//     running job past Config.MaxNodes, MaxActors or MaxJobs (defaults
//     10000, 100000, 10000; ATOLL_GCS_MAX_NODES, ...) is refused with
//     RESOURCE_EXHAUSTED, and so is a new entry that would take its
//     table past three quarters of its bucket's size (Config.NodesBucketBytes
//     32 MiB, ActorsBucketBytes 128 MiB, JobsBucketBytes 32 MiB: the
//     buckets' MaxBytes; the last quarter is kept for updates, which a full
//     bucket would refuse). An entry larger than Config.MaxEntryBytes
//     (64 KiB, the buckets' MaxValueSize) once its actor's death cause is
//     shortened is INVALID_ARGUMENT. No bucket
//     has a TTL: entries that must persist (live nodes, named actors) do.
//   - Why these caps: every driver that joins a cluster adds a job, a node
//     that dies when it exits and the actors it created, so without caps a
//     long-lived head grows with every job. Dead actors are capped lower
//     than Ray's 100,000 because a list reply here is one NATS message
//     (1 MiB by default) and a dead actor takes about 250 bytes. The tables
//     remember the order of deaths (at load, the order of the KV stream);
//     after every change and after loading, the oldest deaths past a cap
//     are purged. A failed purge is logged, the entry forgotten in memory
//     all the same and purged again by the next start.
//   - Bucket space: JetStream refuses any write that does not fit a full
//     bucket (a node's death, which makes its entry larger, included), so
//     the tables estimate what their entries take (encoded size plus 96
//     bytes) and refuse new keys past three quarters; the bucket's MaxBytes
//     stays the hard bound (a write it refuses is RESOURCE_EXHAUSTED too).
//     Memory changes only after the write, so this bounds the GCS's memory
//     too. JetStream reserves each bucket's MaxBytes against the server's
//     storage limit, never on disk: the embedded server's limit is a fixed
//     1 GiB (natsembed), and an existing NATS server's max_storage must
//     hold the 192 MiB of buckets, or the buckets must be lowered
//     (ATOLL_GCS_NODES_BUCKET_BYTES, ATOLL_GCS_ACTORS_BUCKET_BYTES,
//     ATOLL_GCS_JOBS_BUCKET_BYTES); the GCS's error says so. Refusals are
//     logged at most once every 10 s, with their count. (With the embedded
//     NATS, the head's heap also holds JetStream's cache of each bucket's
//     current file-store block while the bucket is written at least every
//     10 s: up to 4 MiB a bucket, bounded.)
//   - Unknown ids are NOT_FOUND; malformed ids (not 16 bytes) are
//     INVALID_ARGUMENT. Errors travel as ErrorInfo and come back from the
//     Client typed (errors.Is(err, errs.ErrNotFound)).
//   - Lists (ListNodes, ListActors, ListJobs) are paged by id
//     (atollpb.ListPage): a reply holds the entries after a given id that
//     fit NATS's largest message less 64 KiB, and says whether more
//     follow; the Client's List methods ask page after page and return the
//     whole list. Any other reply too large for NATS is replaced by a
//     RESOURCE_EXHAUSTED error, so a caller never waits out its deadline
//     for a reply that could not be sent.
//
// # Subjects and roles
//
// Requests that only read (ListNodes, GetActor, GetNamedActor, ListActors,
// ListJobs) may also come on ReadSubject (<prefix>.gcs.v1.read), the only
// GCS subject the cluster's reader role may publish to; a change sent
// there is refused with PERMISSION_DENIED.
//
// A node's registrations (RegisterNode, ReregisterNode) are served only on
// its own NodeRequestSubject (<prefix>.gcs.v1.node.<id>), and only for the
// id the subject names; the node may also mark itself dead there. A
// head's NATS lets only that node's user (node.<id>) and the head publish
// on it, so a client registers no node and a node registers no other. A
// registration never followed by a load report expires: the head marks
// it dead ("registered but never heard from") within two of its checks
// (internal/node's doc, "A restarted head").
//
// # Restarts
//
// A restarted GCS actor reloads its tables from KV, and clients that wait
// (ClientOptions.WaitForServer) do not notice. The KV outlives a head: on
// the NATS server given with --nats, or, with the embedded NATS, in the
// head's GCS directory (internal/node), so a head started again on the
// same port and directory reloads nodes, actors and jobs. How the nodes
// come back to it is internal/node's doc ("A restarted head").
//
// # Tracing
//
// The Client injects the caller's W3C trace context into the NATS headers;
// the server extracts it and records a server span "gcs <op>" (op as in
// gcs.proto, e.g. "gcs register_actor") as its child.
//
// # Client
//
// Client has one typed method per op, taking a context first, and
// SubscribeActorEvents / SubscribeNodeEvents for the event subjects. A
// request that finds no GCS fails at once with an UNAVAILABLE error, or
// waits for one with ClientOptions.WaitForServer.
package gcs
