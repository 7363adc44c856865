package objectstore

import (
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// IOEvent is one spill write or restore read the spiller finished
// (Config.OnIO).
type IOEvent struct {
	Kind IOKind
	// Object is the restored object (restores only).
	Object ids.ObjectID
	// Objects and Bytes are what was written or read.
	Objects int
	Bytes   uint64
	// Start and End bound the disk I/O.
	Start, End time.Time
	// Err is why it failed, if it did.
	Err error
}

// IOKind says what an IOEvent is.
type IOKind int

// Kinds of IOEvent.
const (
	IOSpill IOKind = iota + 1
	IORestore
)

// String is the kind's name: "spill" or "restore".
func (k IOKind) String() string {
	if k == IORestore {
		return "restore"
	}
	return "spill"
}
