package placement

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Effect is one thing the Manager asks its shell to do, in the order the
// Manager produced them.
type Effect interface{ effect() }

type (
	// Send asks Node to apply Op (a step of the two-phase commit); its
	// answer comes back as Reply, or a failure to deliver it as a Reply
	// with an error.
	Send struct {
		Node ids.NodeID
		Op   *atollpb.BundleOp
	}
	// Persist writes a group's entry through to the GCS's store (a
	// change after its creation: created, rescheduling; the creation
	// itself is written before Create).
	Persist struct{ Info *atollpb.PlacementGroupInfo }
	// Forget removes the entry of a removed group the Manager forgot
	// (past Config.MaxRemoved) from the store.
	Forget struct{ ID ids.ID16 }
	// Changed says a group's state or placement changed: its waiters
	// are answered and the change published (a removal tells every node,
	// whose waiting tasks of the group fail).
	Changed struct{ Info *atollpb.PlacementGroupInfo }
	// Notify tells Node of a group's removal again: its load report shows
	// work waiting there for a group the Manager removed, so the node
	// missed the removal's notice (NATS delivers at most once), and the
	// work would wait for ever.
	Notify struct {
		Node ids.NodeID
		Info *atollpb.PlacementGroupInfo
	}
)

func (Send) effect()    {}
func (Persist) effect() {}
func (Changed) effect() {}
func (Forget) effect()  {}
func (Notify) effect()  {}
