// Package objectstore is the per-node shared-memory object store of atoll.
//
// One Arena (a memfd mapped MAP_SHARED) holds the bytes of every object on a
// node; the raylet creates it and every local worker and driver maps the
// same file, so an object travels between local processes as (id, offset,
// length) plus a pin, never as a copy.
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
//     Store.TakeEffects.
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
// # Spilling
//
// With Config.SpillDirs (or SpillTarget) set, the store spills when objects
// in memory pass Config.SpillThreshold of capacity (0.8) or a creation
// does not fit: it picks objects (PickSpill), marks them spilling — they
// cannot be freed or moved, as if the spiller pinned them, though clients
// may still read them — and sends each batch, as views of the arena, to
// the spiller, which writes one file per batch. When the write lands the
// store records where each object is on disk, frees the blocks nobody
// pinned meanwhile, and admits waiting creations. A failed write loses
// nothing: the objects stay in memory, the error is counted and logged,
// and no write starts before a back-off (100 ms, doubling to 10 s). A
// creation fails with ObjectStoreFull only when its deadline has passed
// and no spill write is under way.
//
// A Get of a spilled object restores it first: the store allocates a block
// (spilling others, or waiting, as a creation would; restores go before
// creations, higher GetObjectsRequest.priority first), the spiller reads
// the bytes straight into the block and checks their CRC, and the store
// pins the object for the Gets that wait and answers them. A restored
// object keeps its disk copy, so spilling it again only drops its memory. A
// failed read fails the Get with ErrRestoreFailed (an ObjectLostError) and
// leaves the object on disk. Freeing an object removes it from its spill
// file; the file is deleted with its last object.
//
// # Ownership
//
// The Store, the arena and the timers belong to the store actor; nothing
// else touches them, except that the spiller reads and writes the arena
// blocks the store lent it until it answers. The state lives in a value created once by NewProps, so
// it survives a restart of the actor by its supervisor, and a stopped store
// actor spawned again from the same props adopts the objects. Timer callbacks only
// send a message to the actor. A Client holds no state of its own beyond its
// id, its transport and the mapping; views it returns are valid until the object is
// released (Get) or sealed/aborted (Create) and until the Arena is closed.
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
