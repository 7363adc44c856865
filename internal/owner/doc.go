// Package owner is the ownership state machine of one atoll process (a
// driver or a worker process): the objects it owns or borrows and their
// reference counts, the tasks it submitted until they finish (argument
// resolution, dispatch, retries, cancellation, lineage), and the caller
// side of the actors it holds handles to (call order, restarts, death).
//
// Table is pure, like objectstore.Store: it does no I/O, starts no
// goroutine and reads no clock. Events go in as method calls; what the
// outside world must do comes out as Effects (send a task, call an actor,
// ask the GCS where an actor is, cancel a running task, free or revive
// objects in the stores, wake waiters, acknowledge a generator's items),
// drained with TakeEffects in the order they happened. Table is not safe
// for concurrent use.
//
// # Events and effects
//
//	event (method)              from                           effects it may produce
//	Put, Borrow, AddRef         Put, a borrowed ref, the gob   -
//	                            encoding of a ref
//	Lend                        a worker process starting a    - (borrowed entries with their
//	                            task: what its owner lent it   lender and contained refs)
//	Export                      a worker process returning     - (its objects become borrowed
//	                            refs inside values             entries; their values leave in
//	                                                           TaskResult.transferred)
//	Submit                      Remote, New, method calls      SendTask or CallActor once the
//	                                                           arguments resolve; Dispatched;
//	                                                           Finished (bad arguments)
//	Result                      the owner actor or a direct    adopts handed-over objects, applies
//	                            delivery (raylet, gateway,     the borrower's report, resolves
//	                            worker connection)             returns (Notify), retries
//	                                                           (Retryable: Retried, SendTask,
//	                                                           CallActor), LocateActor (a call
//	                                                           failed at its actor's node),
//	                                                           Finished, Free; a stale attempt's
//	                                                           result: FreeStrays of the copies it
//	                                                           stored where the record has none
//	Cancel                      Cancel, a cancelled context    Finished (not dispatched, or an
//	                                                           unsent call), else CancelTask
//	DropRef                     Release, a collected handle    Free of stored objects whose count
//	                                                           reached zero, recursively through
//	                                                           contained refs
//	ActorEvent, ActorKilled     GCS actor events, Kill         CallActor of queued calls; Finished
//	                                                           (ActorDiedError) of pending calls;
//	                                                           a dead actor's borrows end
//	ActorLocated                the GCS's answer to            as ActorEvent, unless older than
//	                            LocateActor or to a passed     what the entry knows; LocateActor
//	                            handle's lookup                again (a call lost meanwhile; a
//	                                                           second later if it places the actor
//	                                                           where a call saw its node die);
//	                                                           CallActor at the forgotten address
//	LocateFailed                the shell's lookup gave up     CallActor of the waiting calls at
//	                                                           the forgotten address; with none,
//	                                                           LocateActor again
//	AskDue                      an AskActor's wait ended       LocateActor if calls still wait
//	                                                           for the actor's address (AskActor
//	                                                           when an answer or a call leaves
//	                                                           them waiting for an event only)
//	DropActorHandle             a collected handle             the actor's entry goes once no
//	                                                           handle or call needs it
//	NodeDied, WorkerDied        a dead node or process         borrowed objects whose owner lived
//	                                                           there read as OwnerDiedError; the
//	                                                           dead borrower's borrows end
//	SubmitGenerator,            a generator's Remote, its      GeneratorAck (count consumed);
//	TakeGeneratorItem,          items, Next, the stream's      Free of items nobody holds
//	DropGenerator               cleanup or Release
//	Reconstruct                 a Get that found its object    SendTask of the producing task
//	                            lost                           (and of released arguments), Revive
//	TakeDropReports, ReportTo,  a borrower's standalone        - (reports to send; applied like
//	ApplyBorrowReport           reports, both sides            the report in a result)
//	Close                       Shutdown                       Finished of every pending task;
//	                                                           no more Free
//	TaskState (a query)         a Get that timed out,          -
//	                            ForceCancel
//
// Dispatched and Finished go only to tasks submitted with an Attach (the
// shell's data for the task: a span to end, a context watch to forget, a
// pending call to free); the runtime gives none to a plain task, so that
// one costs two effects fewer.
//
// With Config.Pack, a leasable task's spec is packed when it is
// dispatched (internal/specpack: its kind's shared fields kept once, its
// own encoded) and sent as SendPacked instead of SendTask; the Table
// keeps the packed form for its retries and lineage and unpacks it to
// run the task again.
//
// The shell is internal/runtime's ownerShell: it applies every event under
// one mutex, the only lock on the Table, and queues the effects; whoever
// stepped the Table then drains the queue outside the lock unless another
// goroutine is draining already, in which case that one applies them. So
// effects reach the node in the Table's order (an actor's calls stay in
// call order) and no lock is held across I/O. User goroutines step the
// Table directly (a Put or a Get of a ready object costs a mutex, not a
// mailbox round trip); the owner actor steps it for results, actor events
// and garbage-collected refs and handles.
//
// Scenario tests in testdata/*.txt (cockroachdb/datadriven; go test
// ./internal/owner -rewrite) script the protocol: retry racing cancel, a
// result after cancel, duplicated results, a lost forwarded result
// (FORWARD_LOST past the lease; the retry ignores the stale attempt, and
// late_result.txt: the lost attempt finished after all, and its copy
// goes), node
// death with borrowed refs, an actor restart with queued calls, an actor
// call lost on its way to its actor's node (actor_forward_lost.txt: the
// actor moved, the event missed, or it did not move; answers older than
// the entry's events; actor_lost_no_retries.txt: a call not retried, a
// lookup that gives up, NODE_DIED), actor entries forgotten, shutdown, a generator's stream (items while it runs,
// a retry's repeated items, an error after k items, a stream dropped while
// its task runs, a worker past its backpressure limit), lineage, and the
// borrower protocol from both sides (borrow.txt: lending, reports, their
// order, a borrower's death, handed-over returns; borrower.txt: Lend,
// HeldFor, Export and its refusals). internal/interaction runs Tables
// beside the other parties' cores.
//
// # Tasks and retries
//
// Submit registers the returns as pending and references the ref
// arguments; the task waits in the Table until every ref argument has a
// value (each pending object lists the tasks waiting on it: no goroutine or
// callback per task), then dispatches with small values inlined into the
// spec. A failed argument fails the task with the same error. Retryable
// decides: WORKER_CRASHED, NODE_DIED, FORWARD_LOST and OBJECT_STORE_FULL
// (the node's store could not take an output or an argument in time)
// within MaxRetries (default 3); application errors only with
// RetryExceptions; never
// RESOURCE_EXHAUSTED (a node refused it past its quota); an actor call when
// its actor crashed (so marked also when its node died or the call was
// lost on its way), within its MaxTaskRetries. (A lost call may have run:
// its actor's host answers a retry of a call it ran FORWARD_LOST, not
// marked crashed, so it is not run twice; package workerproto.) A stale attempt's result
// or a duplicate settles nothing. An attempt failed FORWARD_LOST may still
// finish on its node and store its returns there under the retry's ids
// (its gateway passes the late result on): each such copy the record does
// not hold — the record places the object on another node, holds it
// inline or as an error, or has freed it — goes with FreeStrays (that
// node's copy only: the object is not freed); a return still pending (a
// retry or rebuild that may store on that node) is marked strays instead,
// so freeing it frees every copy. A task cancelled by its caller is never
// retried and fails with CancelledError whatever its last attempt reported
// (a success that raced the cancel stands).
//
// Actor calls: per actor the Table keeps a queue in call order; a call is
// sent once its arguments are resolved and every earlier call has been
// sent, carrying the caller's sequence number for that actor
// (TaskSpec.sequence_number, 1, 2, 3, ... per caller_id, a random id per
// handle entry; a retried call takes the next number), by which the host
// orders each caller's calls. The process that creates an actor owns it:
// OwnedLiveActors lists what Shutdown kills; a detached actor is registered
// as not owned.
//
// Where an actor lives (its address, "<node hex>/<host>" in a cluster)
// comes from its creation's result and the GCS's events (ALIVE;
// RESTARTING with no address when its node died, and its owner sends the
// creation again; DEAD). A known address is kept until the Table forgets
// it (an ALIVE event naming another one meanwhile changes nothing). A
// call that fails naming the node of the actor's address, whether or not
// it is retried, makes the Table forget it: NODE_DIED, and FORWARD_LOST,
// the call or its result lost between the nodes (the gateway marks a
// lost call crashed). The actor may have moved, the event that said so
// missed (events are best effort), or not, and then no event comes: the
// Table emits LocateActor and the shell asks the GCS, whose answer goes
// to ActorLocated. One lookup per actor is in flight; a call lost again
// meanwhile asks again once it ends (its answer may be older than that
// loss). ActorLocated applies the answer as an event only while the
// entry has no address and if it names no fewer restarts than the events
// did (an answer may overtake an event the GCS published after it; a
// death always applies), and not if it places the actor on a node a call
// saw die (the GCS has not heard of that death yet; its event follows,
// and the Table asks again RelocateAfter later in case it is missed).
// Meanwhile the retry and later calls wait in the queue, in call order,
// and fail at once if the answer says DEAD. No call waits for an answer
// that does not come: if the shell's lookup gives up (LocateFailed: the
// GCS did not answer its few tries), or the answer neither places the
// actor nor says it restarts elsewhere or is dead, the entry gets back
// the address it forgot and the waiting calls go there, to complete or
// fail as calls there do (at once with NODE_DIED if its node is known
// dead; past the forward lease with FORWARD_LOST), and a failure asks
// again. An entry with no address to give back (a received handle whose
// first lookup gave up) asks again, and its calls wait for the answer. Forgetting an address makes this process a new caller of the
// actor (its calls numbered from 1 again), at the same address too.
//
// # Reference counting
//
// The process that creates a ref owns it. Its Table counts, per object,
// live ObjectRef handles, uses by pending tasks (arguments) and containers
// (objects whose value holds a serialised ref). A handle's count drops
// when the SDK finds it garbage after a collection (its weak pointer is
// nil; the sweep only posts a message to the owner actor) or at Release
// (idempotent). At zero
// the entry goes and, if stored, a Free effect deletes it from the store;
// the refs its value held are dropped in turn. A return is freed in the
// stores whatever value it ended with when copies the record does not
// know of may be there: an attempt of its task ended without its result
// (lost on the way, or failed after storing some returns), or its stored
// value was dropped to rebuild it (the copy a reader could not reach may
// live on). Refs inside values are found
// by a marker in their gob encoding; encoding one takes a reference that
// the container holds until it is freed. A pin, not a reference, keeps a
// store block (see package objectstore), so a View outlives its refs.
//
// A handle made for a task's return (SubmitRecords) or a Put (PutRecord)
// keeps the object's Record, and LookupRecord reads the object through it
// with no lookup by id: in a table of many objects a map lookup is mostly
// cache misses. A Record is trusted only while its object has references
// (the handle holds one); one without is no longer the object's, and the
// id is looked up instead.
//
// # Borrowing
//
// Refs inside values cross processes with Ray's borrower protocol. The
// state of both sides is here (borrow.go, borrowreport.go); the worker's
// side of a task is internal/runtime's borrow.go.
//
//   - Lending. When a task dispatches, its owner lends every object its
//     arguments' values hold, transitively (lentClosure, at most MaxLent per
//     task, else the task fails with ErrInvalidArgument). Each goes in
//     TaskSpec.borrowed with its value and the refs that value holds; a lent
//     object still being computed holds the task back. The task's references
//     to its arguments keep all of them alive while it runs. The worker
//     process registers them (Lend) as borrowed entries, each with one
//     reference for the task, its lender and its contained refs, so a value
//     decoded later (an actor's field) still finds its inner refs. Freeing a
//     borrowed entry never deletes from the store.
//   - Reporting. When the task ends the worker drops the task's references
//     and puts in its result (TaskResult.borrows, borrows_reported,
//     borrows_seq) every object that lender lent it and it still holds, in
//     any task: a report replaces the previous one. First it runs a
//     collection and drops the refs GobDecode made that the task no longer
//     reaches, so only refs that escaped the task (an actor's state, a
//     global) are reported. The owner keeps one reference per reported
//     object for that borrower (keyed by the actor for actor calls, by the
//     worker process for tasks) and drops those a later report leaves out;
//     an older report (lower borrows_seq) is ignored. A borrower that lends
//     on (a nested task) takes its own borrowers' reports as references to
//     its borrowed entries, which its report to its lender then names: the
//     chain keeps the object alive at its owner.
//   - Dropping. A borrower that drops objects outside its lender's calls
//     (another caller's call clears an actor's field, a goroutine of the
//     actor calls Release, the collector finds a handle unreachable)
//     reports to that lender on its own (atollpb.BorrowReport), so the
//     object does not wait for a next result that may never come. The
//     borrower's Table keeps reportedTo, the lenders whose last report
//     named objects, marked dirty when an object they lent is freed here. A
//     standalone report has the in-result report's full-set meaning and
//     takes its number from the same per-process counter, under the Table's
//     lock with its content (TakeDropReports, ReportTo), so "ignore an older
//     report" orders both kinds. Flushes: at a task's end, for every dirty
//     lender but the task's owner (its report rides in the result);
//     outside tasks, one coalesced flush posted to the owner actor, at once
//     if no task runs, else at the running task's end, or after 1 s should
//     none end. One report per dirty lender per flush: a call that drops
//     10,000 refs sends one message.
//   - Route of a standalone report: worker -> borrow_report frame -> the
//     raylet-side proxy (which stamps the borrower's worker and actor ids:
//     a process reports only as itself) -> raylet; an owner on another node
//     is reached through its gateway (<prefix>.node.<owner node>.borrows,
//     validated there: well-formed ids, the owner node itself, a nonzero
//     seq, at most MaxLent ids); an owner here is a worker process (down its
//     connection) or the driver's owner actor (node.Hooks.DeliverBorrows).
//     Both land in mailboxes after the results sent before them. The owner
//     (ApplyBorrowReport) checks it again, keys it like results and applies
//     it as a result's report. Sending never waits for the owner.
//   - Returning. Refs inside a task's return values: the worker hands the
//     objects it created over to the task's owner (Export,
//     TaskResult.transferred, each value with its contained refs; the worker
//     keeps a borrowed entry, so its own handles still read). The owner
//     adopts them as its own, then references every ref the returns and
//     handed-over values hold. A ref to an object still being computed, or
//     borrowed from a third process, cannot be returned: ErrInvalidArgument
//     saying what to do.
//   - Death. A borrower's borrows end when its process is known dead: a
//     crashed attempt (WORKER_CRASHED, actor_crashed), an actor's death (GCS
//     event, Kill), WorkerDied. A restarted actor's process keeps its worker
//     id but numbers its reports from its start time: its first report
//     replaces the old one. A pool worker that dies idle holding a borrow (a
//     global) is not seen: its objects live until the owner's job ends.
//   - Bounds. MaxLent objects per task and per standalone report;
//     MaxBorrowers borrower records (a report from one more is refused and
//     counted, Stats.BorrowsRefused); a report only references objects the
//     owner has. Malformed lent entries are skipped with ErrInvalidArgument
//     and a log line; a malformed standalone report is refused.
//   - Standalone reports that cannot apply: one for an owner that is gone
//     is dropped (nobody keeps those objects); one from a borrower the owner
//     has no record of is ignored, so a late report of a dead process cannot
//     pin objects for ever; one NATS cannot carry (past the max payload) is
//     dropped with a warning (the objects then live until the borrower's
//     next report or death). One that overtakes the in-result report it
//     follows (across nodes, or racing the first report) finds no record
//     yet: it is kept aside holding no reference (early, the newest per
//     borrower, at most MaxEarlyReports = 1024), and replaces the
//     borrower's next in-result report if newer (borrowerResult).
//
// Limit, on purpose: an object a worker created and handed over stays in
// the store as that worker's (the store ties an object to the process that
// created it), so it is lost (ObjectLostError) if that process dies, as in
// Ray, where its creator owns it. End-to-end tests: the root's
// borrow_test.go (process workers: refs returned inside structs, lent on
// through nested tasks, 10,000 refs in one argument, an actor keeping a
// ref, that actor's process killed), borrow_cluster_test.go (3 nodes),
// borrow_drop_test.go (standalone reports, in process workers and across
// nodes); after each, the store and every owner table are empty.
//
// # Lineage reconstruction
//
// Ray's object reconstruction (lineage.go; testdata/lineage.txt). When a
// task that may be retried (MaxRetries not 0; not an actor call or
// creation; no refs inside its arguments or returns) finishes, the Table
// keeps its spec as its lineage while one of its returns lives, within a
// budget (WithLineageBudget, DefaultLineageBudget 64 MiB of encoded specs;
// the oldest is evicted first). The finished task's record is its
// lineage entry; a return's record points at it (there is no table of
// lineage by task id), and a list in recording order serves eviction. A
// lineage pins its arguments' records, not
// their data: an argument whose every ref is dropped is freed from the
// stores, but its record moves to released until the last lineage naming
// it goes.
//
// Loss is found lazily, by a reader: a driver's Get whose fetch fails with
// ObjectLostError (every copy gone) calls Reconstruct. The producing task
// runs again under the same return ids and a new attempt number, its
// returns go back to pending, and the Get waits again (at most 3 times).
// Released arguments it needs are revived and rebuilt first, recursively;
// a Revive effect tells every store the id is live again, so reading it is
// no read after free. An argument that is lost but still referenced is
// found when the rerun runs: its node fails the attempt with OBJECT_LOST
// naming it, and Result rebuilds that argument and dispatches the task
// again once it is back, without using a retry (recoverArgument, at most 3
// times a task). A rebuild sends every return of the rerun task back to
// pending, also those that undispatched tasks had counted as ready:
// dispatch counts its arguments again. What cannot be rebuilt fails with
// ObjectReconstructionFailedError (OBJECT_RECONSTRUCTION_FAILED, also an
// ErrObjectLost) saying why: made by Put, an actor call's output, submitted
// with MaxRetries(0), lineage evicted, an argument made by Put and freed,
// rebuilt 3 times already. Stats counts lineage kept, bytes, evictions and
// reconstructions. Not done: objects borrowed by worker processes are
// rebuilt only when their owner reads them, and nothing rebuilds eagerly
// when a node dies.
//
// # Streaming generators
//
// A generator task's items are objects of the caller, numbered by index,
// with deterministic ids (GeneratorItemID(task, i): return index 1+i;
// return 0 is the task's end, the number of items or its error). The
// stream (generators.go) holds the items reported in index order, how many
// the caller took and the backpressure limit, until the caller drops it.
// An item whose index is the next one is added to the stream, with those
// held early that follow it; one further on (its report overtook one
// before it, or that one was lost) is held early, under the limit past
// the items taken (maxEarlyItems without a limit); any other is ignored,
// and what it stored freed if the stream does not hold it. Every report
// and every item taken emits GeneratorAck{consumed, received}, which the
// shell sends to the worker running the attempt: received, the items
// held in order, tells a worker held back which reports to send again. A
// retry's items already
// in the stream are ignored. A worker that ignores its acks has its items
// past taken+limit dropped (the stream ends short with ObjectLostError);
// an index is bounded by MaxGeneratorItems. A stream dropped while its task
// runs acknowledges "all consumed", so the producer is never held by a
// reader that is gone.
package owner
