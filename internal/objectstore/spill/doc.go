// Package spill stores the objects the object store spills out of its
// shared-memory arena, and reads them back.
//
// The package has three layers, each behind a small interface so that a
// test (or another kind of storage) can replace it:
//
//   - Target is where spill files live: WriteFile writes one new file
//     (whole, or not at all) from a function that streams its content,
//     Open gives a file whose ranges can be read into a caller's buffer,
//     Remove deletes a file. Local is the Target of one or more local
//     directories, used round-robin; object storage can implement the same
//     calls later, as pebble's objstorage does. Local also tells the free
//     space of its directories (Space, statfs) and gives back the pages
//     of a freed object (Puncher, fallocate's punch hole).
//   - Local files have no name: each is unlinked right after it is
//     created and read through the descriptor kept for it, so it goes with
//     the process that wrote it, however that process ends. At most
//     LocalOptions.MaxUnlinked files are held so; later ones keep their
//     names until Remove.
//   - FS is the file system Local works on: OS (the real one) or a
//     FaultyFS wrapping it, which injects disk-full, short-write and read
//     errors on a script, in the manner of pebble's vfs/errorfs.
//   - WriteBatch and ReadObject give spill files their format: the objects'
//     bytes, each starting on a page (Page), then an index (id, offset, length, CRC-32 of
//     every object) and a footer with a magic number, so a spill file
//     describes itself (ReadIndex). ReadObject reads an object straight into
//     the caller's buffer — for the store, a view of the arena, so there is
//     no intermediate copy — and verifies its checksum.
//
// Reading trusts nothing in a file: an index entry that does not lie
// wholly before the index, or bytes whose checksum does not match, are
// ErrCorrupt (FuzzReadIndex). Local holds a flock(2) lock per store
// instance beside its files, so a later instance removes the named files
// of one whose process died (package lockfile).
//
// The package does no scheduling: the object store decides what to spill
// and when (a pure picker), and its spiller actor calls WriteBatch,
// ReadObject and Target.Remove off the store actor's goroutine.
package spill
