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
//     deferred outcomes (queued creations admitted or expired, freed blocks)
//     are drained with Store.TakeEffects.
//   - The store actor (NewProps) is the shell: one protoactor-go actor
//     serialises every decision, reserves memory (fallocate) before handing a
//     range out, arms the timers of waiting creations and gets, and replies
//     with the atollpb messages of store.proto.
//   - Client is the typed in-process API of drivers and workers: Create
//     returns a writable view into the arena, Get returns read views that
//     stay valid while the pin is held.
//
// # Ownership
//
// The Store, the arena and the timers belong to the store actor; nothing
// else touches them. The state lives in a value created once by NewProps, so
// it survives a restart of the actor by its supervisor, and a stopped store
// actor spawned again from the same props adopts the objects. Timer callbacks only
// send a message to the actor. A Client holds no state of its own beyond its
// id and the mapping; views it returns are valid until the object is
// released (Get) or sealed/aborted (Create) and until the Arena is closed.
//
// # Invariants
//
// Building with the tag "invariants" (or with -race) checks the Store after
// every operation (used bytes equal the sum of the objects' blocks, no
// negative pins) and panics on a double free or a release of a pin the
// client does not hold. Production builds return errors instead.
package objectstore
