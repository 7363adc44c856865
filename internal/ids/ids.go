// Package ids defines the identifiers atoll uses for jobs, tasks, objects,
// actors, workers and nodes.
//
// Task, actor, worker, node and job ids are 16 random bytes. An ObjectID is
// the id of the task that produces it followed by a big-endian uint32 index,
// so the producer of any object can be recovered from its id (lineage).
// Objects created by Put carry the high bit in their index.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Len16 is the length of every id except ObjectID.
const Len16 = 16

// ObjectIDLen is the length of an ObjectID.
const ObjectIDLen = Len16 + 4

// putBit marks objects created by Put rather than returned by a task.
const putBit = 1 << 31

// ID16 is the representation shared by the 16-byte ids.
type ID16 [Len16]byte

func newID16() ID16 {
	var id ID16
	if _, err := rand.Read(id[:]); err != nil {
		// crypto/rand never fails on Linux; if it does the process cannot
		// produce unique ids and must not continue.
		panic(fmt.Sprintf("ids: crypto/rand: %v", err))
	}
	return id
}

// String renders the id as lowercase hex.
func (id ID16) String() string { return hex.EncodeToString(id[:]) }

// Short renders the first 8 hex digits, for logs.
func (id ID16) Short() string { return hex.EncodeToString(id[:4]) }

// IsZero reports whether the id is unset.
func (id ID16) IsZero() bool { return id == ID16{} }

// Bytes returns a copy of the id's bytes.
func (id ID16) Bytes() []byte { b := id; return b[:] }

func id16From(b []byte) (ID16, error) {
	var id ID16
	if len(b) != Len16 {
		return id, fmt.Errorf("ids: want %d bytes, got %d", Len16, len(b))
	}
	copy(id[:], b)
	return id, nil
}

type (
	// TaskID names one task (all its attempts).
	TaskID = ID16
	// ActorID names one actor instance (across restarts).
	ActorID = ID16
	// WorkerID names one worker: a process, or an in-process worker.
	WorkerID = ID16
	// NodeID names one node (one raylet).
	NodeID = ID16
	// JobID names one driver's job.
	JobID = ID16
	// PlacementGroupID names one placement group.
	PlacementGroupID = ID16
)

// NewTaskID returns a fresh random TaskID.
func NewTaskID() TaskID { return newID16() }

// NewActorID returns a fresh random ActorID.
func NewActorID() ActorID { return newID16() }

// NewWorkerID returns a fresh random WorkerID.
func NewWorkerID() WorkerID { return newID16() }

// NewNodeID returns a fresh random NodeID.
func NewNodeID() NodeID { return newID16() }

// NewJobID returns a fresh random JobID.
func NewJobID() JobID { return newID16() }

// NewPlacementGroupID returns a fresh random PlacementGroupID.
func NewPlacementGroupID() PlacementGroupID { return newID16() }

// FromBytes parses a 16-byte id.
func FromBytes(b []byte) (ID16, error) { return id16From(b) }

// MustFromBytes parses a 16-byte id from a trusted source (our own
// messages); a malformed id yields the zero id.
func MustFromBytes(b []byte) ID16 {
	id, _ := id16From(b)
	return id
}

// ObjectID names one object.
type ObjectID [ObjectIDLen]byte

// ReturnObjectID is the id of return value index i of task t.
func ReturnObjectID(t TaskID, i int) ObjectID {
	var o ObjectID
	copy(o[:Len16], t[:])
	binary.BigEndian.PutUint32(o[Len16:], uint32(i)&^putBit)
	return o
}

// PutObjectID is the id of the i-th object put by the task (or driver
// pseudo-task) t.
func PutObjectID(t TaskID, i uint32) ObjectID {
	var o ObjectID
	copy(o[:Len16], t[:])
	binary.BigEndian.PutUint32(o[Len16:], i|putBit)
	return o
}

// TaskID returns the id of the task that produced (or put) the object.
func (o ObjectID) TaskID() TaskID {
	var t TaskID
	copy(t[:], o[:Len16])
	return t
}

// Index returns the return index (or put counter) of the object.
func (o ObjectID) Index() uint32 { return binary.BigEndian.Uint32(o[Len16:]) &^ putBit }

// IsPut reports whether the object was created by Put.
func (o ObjectID) IsPut() bool { return binary.BigEndian.Uint32(o[Len16:])&putBit != 0 }

// String renders the id as lowercase hex.
func (o ObjectID) String() string { return hex.EncodeToString(o[:]) }

// Short renders a short prefix for logs.
func (o ObjectID) Short() string { return hex.EncodeToString(o[:4]) + fmt.Sprintf("/%d", o.Index()) }

// IsZero reports whether the id is unset.
func (o ObjectID) IsZero() bool { return o == ObjectID{} }

// Bytes returns a copy of the id's bytes.
func (o ObjectID) Bytes() []byte { b := o; return b[:] }

// ObjectIDsBytes returns the bytes of each id (a copy each), as
// protobuf messages carry id lists.
func ObjectIDsBytes(idList []ObjectID) [][]byte {
	out := make([][]byte, len(idList))
	for i, id := range idList {
		out[i] = id.Bytes()
	}
	return out
}

// ObjectIDFromBytes parses an ObjectID.
func ObjectIDFromBytes(b []byte) (ObjectID, error) {
	var o ObjectID
	if len(b) != ObjectIDLen {
		return o, fmt.Errorf("ids: object id wants %d bytes, got %d", ObjectIDLen, len(b))
	}
	copy(o[:], b)
	return o, nil
}

// MustObjectID parses an ObjectID from a trusted source; a malformed id
// yields the zero id.
func MustObjectID(b []byte) ObjectID {
	o, _ := ObjectIDFromBytes(b)
	return o
}

// FromHex parses a 16-byte id from its hex form (String).
func FromHex(s string) (ID16, error) {
	var id ID16
	if len(s) != 2*Len16 {
		// Decoded for its error: an odd length or a bad byte first,
		// as hex.DecodeString finds them.
		b, err := hex.DecodeString(s)
		if err != nil {
			return id, fmt.Errorf("ids: %w", err)
		}
		return id16From(b)
	}
	// Into the id itself: it is decoded on every task a worker runs.
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ID16{}, fmt.Errorf("ids: %w", err)
	}
	return id, nil
}
