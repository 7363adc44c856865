// Package objectstore is the per-node shared-memory object store of atoll.
//
// One Arena (a memfd mapped MAP_SHARED) holds the bytes of every object on a
// node; the node creates it and every local worker and driver maps the
// same file, so an object travels between local processes as (id, offset,
// length) plus a pin, never as a copy. Small values never come here: the
// owner keeps values up to the inline threshold (100 KiB by default) in
// its own table and sends them inside task specs and results.
//
// The package is layered the way etcd's raft is:
//
//   - Allocator places blocks inside the arena (best fit, 64-byte aligned,
//     coalescing). Pure: no I/O.
//   - Store is the state machine of objects: created, sealed, pinned per
//     client, deleted-pending, plus the FIFO queue of creations waiting for
//     space. Pure: no goroutines and no clock; time comes in as arguments and
//     deferred outcomes (queued creations admitted or expired, freed blocks,
//     spill files to write, objects to read back) are drained with
//     Store.TakeEffects. Scripted scenarios (store_test.go,
//     store_spill_test.go, store_amm_test.go) drive it, and
//     internal/interaction holds one Store per node of its multi-party
//     scripts.
//   - PickSpill is the spill policy: given a snapshot of the objects in
//     memory and the bytes to free, it picks sealed, unpinned objects, least
//     recently used first, and fuses them into files of at most
//     SpillBatchBytes and SpillMaxObjects. Pure, and tested with scripted
//     scenarios.
//   - The store actor (NewProps) is the shell: one protoactor-go actor
//     serialises every decision, reserves memory (fallocate) before handing a
//     range out, arms the timers of waiting creations and gets, and replies
//     with the atollpb messages of store.proto.
//   - The spiller actor, a child of the store actor, does the spill file
//     I/O through a spill.Target (package spill: local directories, or a
//     faulty file system in tests), so the store actor never blocks on disk.
//   - Client is the typed API of drivers, node components and worker
//     processes: Create returns a writable view into the arena, Get returns
//     read views that stay valid while the pin is held. It reaches the
//     store through a Transport: Mailbox (actor messages, in the node's
//     process) or FrameTransport (workerconn frames from a worker process,
//     served on the raylet side by a FrameServer). The Client gives back
//     what the store grants a caller that gave up: a creation is aborted,
//     a late Get reply's pins are released.
//
// # Protocol
//
// Only an object's location and pins travel in messages, never its bytes
// (atollpb/store.proto):
//
//	CreateObjectRequest{id, size, codec, client, timeout_ms, owner, copy}
//	    allocate a block (best fit), reserve it with fallocate (in 1 MiB
//	    chunks, remembered) so that a write can never SIGBUS, reply with the
//	    location. If it does not fit, the request joins a FIFO queue and is
//	    answered when frees make room, or with OBJECT_STORE_FULL after its
//	    timeout (Config.CreateTimeout, 10 s by default). owner ties the object
//	    to the process that owns its references; copy marks a pulled copy the
//	    Active Memory Manager may drop.
//	SealObjectRequest      the creator is done writing: the object becomes
//	                       readable and waiting Gets are answered
//	AbortObjectRequest     drop an unsealed object (or a queued creation)
//	GetObjectsRequest{ids, client, timeout_ms, priority}
//	                       pin each sealed object for the client and return
//	                       its location; with a timeout, wait for objects not
//	                       yet sealed; restore spilled ones first
//	ReleaseObjectsRequest  drop one pin per id
//	DeleteObjectsRequest   the owner's last reference is gone: free now, or
//	                       at the last unpin (revived: the id is live again,
//	                       a lineage rebuild makes it anew; stray_node: not
//	                       freed, only this store's copy goes, one a late
//	                       attempt stored after its owner moved on)
//	ClientDisconnected     a process died: drop its pins, abort its unsealed
//	                       objects, free the objects it owned once unpinned
//	StoreStatsRequest      capacity, used, pinned, pending creations,
//	                       spilling and restoring, counters
//	ListObjectsRequest, DropCopiesRequest
//	                       the Active Memory Manager's inventory
//	                       (Store.Inventory: at most 4096 objects, largest
//	                       first) and its drops of copies (Store.DropCopies
//	                       checks each again: a sealed copy, unpinned, no
//	                       spill I/O, not read within the grace)
//
// A pin, not a reference, keeps a block: a DeleteObjectsRequest for a pinned
// object frees it at its last unpin, so a reader's view stays valid after
// every reference is gone, and the block cannot be spilled or reused under
// it.
//
// # The client and its transports
//
// There is one client (Client, client.go): it builds the requests (the
// store-side timeout is 95% of what is left of the caller's deadline),
// turns replies into views of the caller's own mapping of the arena (each
// location checked against the id asked for and the arena's bounds) and
// into typed errors, and gives back what the store grants a caller that
// gave up. It speaks through a Transport (transport.go, frames.go):
//
//	transport       used by                            request / reply
//	Mailbox         the driver, the node's components  an actor message to the store; a
//	                (the cluster's fetcher and          protoactor future, waited on by one
//	                transfer server)                    goroutine per request
//	FrameTransport  workers (either mode)              a workerconn frame to the raylet,
//	                                                   whose FrameServer forwards it to the
//	                                                   store; the reply frame
//
// A transport delivers messages in the order they were sent, requests and
// one-way messages alike: the FrameServer sends each request to the store
// on the connection's reader goroutine, in frame order, and waits for the
// reply on a goroutine of its own. It overwrites the request's client id
// with the worker's (a worker can only pin as itself).
//
// Abandoned grants (a caller's context ends, or no answer comes in time,
// while a Create waits for space or a Get waits for a seal or a restore)
// are handled in one place, Client.call with giveBack and withdraw:
//
//   - a creation is withdrawn at once with an abort sent after it: the
//     store drops it from its FIFO (where it would hold up every creation
//     behind it) or, if it was granted meanwhile, frees the unsealed block.
//     Its late reply needs nothing more; an abort sent on the late reply
//     could hit a new creation of the same id.
//   - a Get's late reply has every pin it took released (the mailbox
//     transport hands it over from the future's goroutine, the frame
//     transport from the connection's reader through a goroutine, since the
//     release is a frame write; workerconn.Conn.CallLate keeps the call its
//     caller abandoned).
//   - Seal goes ahead even if the context is done (the store answers it at
//     once; a written object is better sealed than left unsealed); if the
//     store does not answer, the object is aborted. Abort with a done
//     context is sent without waiting for its answer.
//
// The FrameServer waits for the store as long as the worker's client does:
// the worker's deadline is the one that counts, and when the worker gave up
// first, its client gives back what the forwarded reply grants. If the
// server gives up first (the store did not answer in that time), it answers
// UNAVAILABLE after aborting a creation, and releases the pins of a Get's
// later reply itself. If the worker's connection ends, it gives back
// nothing: ClientDisconnected reclaims everything the worker held, and a
// second release would be a misuse (a panic under -race). Requests the
// store loses (its actor crashed on one) are waited for 5 minutes past
// their timeout (lateWindow), then given up. Known gaps, both narrow races
// with a worker's death: a Get reply arriving after the server gave up,
// just as the worker dies, could be released after ClientDisconnected (a
// warning, or a panic in invariant builds); and a frame the reader is still
// forwarding when the raylet, having seen the process exit, sends
// ClientDisconnected could be granted to the dead worker (the raylet does
// not wait for the connection's reader to stop).
//
// # Spilling
//
// The store actor owns every spilling decision. Its child, the spiller
// actor (spiller.go), owns only a queue of I/O work and a few open spill
// files. The store lends it views of arena blocks and keeps those blocks
// fixed until it answers: objects being written are spilling (readable, not
// freeable), blocks being filled are restoring (invisible).
//
// With Config.SpillDirs (or SpillTarget) set, after every operation the
// Store computes the bytes to free: memory above Config.SpillThreshold
// (0.8) of capacity plus one batch of headroom, or the space waiting
// creations and restores need. PickSpill picks sealed, unpinned objects,
// least recently used first; copies already on disk are dropped with no
// write, the rest fused into files of at most 100 MiB or 2000 objects,
// cut to the free space of the spill disk (below). The store sends each
// batch (spillWrite, as views of the arena) to the spiller, which writes
// one file through the spill.Target (local directories round-robin, each
// object on pages of its own, a CRC-32 per object, a self-describing
// index) and answers spillWritten; Store.SpillDone records where each
// object is on disk, frees the blocks nobody pinned meanwhile and admits
// waiting creations.
//
// Disk space: the spiller measures the spill directories (spill.Space,
// statfs) after every write and every run of removals and sends it with
// its answer (diskSpace); at start the store measures once. The Store
// (SetDiskSpace) plans no more file bytes (spill.FileSize, in pages) than
// that, less the files in flight, less a reserve of 1/16 of the file
// system (at most a batch, DiskReserveFraction) that only spilling for a
// waiting restore may use. Objects that do not fit are passed over,
// smaller ones may still go. So creations fill the disk to its reserve,
// and a Get of a spilled object can still spill another to make room.
//
// A Get of a spilled object restores it first, at the request's priority
// (Get 2 > Wait 1 > task argument 0): restores take space before
// creations, may spill others or wait up to CreateTimeout; the block is
// reserved, the spiller reads straight into it and checks the CRC, and
// Store.RestoreDone pins the object for every Get that waits. A restored
// object keeps its disk copy until freed, so spilling it again only drops
// its memory, except when the disk is full but for its reserve: then the
// copy is dropped, giving back what spilling for the restore took.
// Freeing an object (or dropping its copy) takes it out of its spill
// file: its pages are punched out (Effects.Punches, spill.Puncher), and
// the file is deleted with its last object.
//
//	object state   arena block         disk copy       Get                freed
//	unsealed       yes                 no              waits              abort / seal
//	in memory      yes                 no              pins               when unpinned
//	spilling       yes, until written  being written   pins               after SpillDone
//	spilled        no                  yes             restore, then pin  at once (leaves its file)
//	restoring      yes (hidden)        yes             waits              after RestoreDone
//	restored       yes                 yes             pins               when unpinned
//
// Failures: a failed write loses nothing. The objects stay in memory, the
// error is counted (spill_errors_total) and logged, and no write starts
// before a back-off (100 ms, doubling to 10 s) while spill.Local retries
// the file in its next directory. A creation fails with ObjectStoreFull
// only when its deadline has passed and no spill write is in flight; so
// does a restore waiting for space. The error's Resource says what ran
// out: StoreDisk if the last pick passed objects over for lack of disk,
// StoreMemory otherwise (everything pinned or in flight). A
// failed read frees the block, leaves the object on disk and fails the
// waiting Gets with ErrRestoreFailed (an ObjectLostError); a later Get
// tries again. When the store actor restarts or stops, the spiller stops
// first and the store forgets the I/O in flight (objects being written
// stay in memory, reads are queued again; late answers are recognised as
// stale). A fault plan's spill-full and spill-slow rules
// (Config.SpillFaults) are asked before each file write and restore read.
//
// Spilling is on by default, into the session directory (atoll's
// WithSpillDirs and WithoutSpilling). Spill files outlive nothing:
// spill.Local removes each file's name right after creating it and keeps
// its descriptor, which writes, restores and punches use, so the kernel
// frees the files when the store removes them or its process ends, kill -9
// included. Past a descriptor budget (spill.LocalOptions.MaxUnlinked: a
// quarter of RLIMIT_NOFILE, at most 4096 files) files keep their names; a
// store removes those when it stops, and each store instance holds a flock
// on "atoll-spill-<tag>.lock" beside its files (package lockfile), so the
// next store that opens the directory removes the named files of
// instances whose process died, logged with their size.
//
// # Reads after free
//
// Each store remembers the latest MaxFreedRemembered (16,384) ids freed by
// their owner (DeleteObjectsRequest, which a cluster's free broadcast
// brings to every node); a creation of the id again forgets it. A Get of
// a remembered id is counted (StoreStats.reads_after_free_total) and
// answered as for any missing object. A correct runtime keeps the count
// at 0; samples/chaos checks it on every live node.
//
// # Ownership
//
// The Store, the arena and the timers belong to the store actor; nothing
// else touches them, except that the spiller reads and writes the arena
// blocks the store lent it until it answers. The state lives in a value
// created once by NewProps, so it survives a restart of the actor by its
// supervisor (actors.RestartForever), and a stopped store actor spawned
// again from the same props adopts the objects. Timer callbacks (one
// deadline timer, time.AfterFunc) only send a message to the actor. A
// Client holds no state of its own beyond its id, its transport and the
// mapping; views it returns are valid until the object is released (Get)
// or sealed/aborted (Create) and until the Arena is closed. mailboxCall.mu
// guards one request's outcome against its caller giving up (a leaf).
//
// # Invariants
//
// Building with the tag "invariants" (or with -race) checks the Store after
// every operation (used bytes equal the sum of the blocks of the objects in
// memory, no negative pins, every spilled object in exactly one live spill
// file, bytes on disk and in flight adding up) and panics on a double free
// or a release of a pin the client does not hold. Production builds return
// errors instead.
package objectstore
