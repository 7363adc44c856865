package amm

import (
	"cmp"
	"fmt"
	"slices"
)

// NodeID and ObjectID name nodes and objects (hex, as the rest of atoll
// prints them), so that policies written outside atoll can name them too.
type (
	NodeID   string
	ObjectID string
)

// AllNodes as Object.Replicas asks for a copy on every live node that is
// not retiring (nodes that join later included).
const AllNodes = -1

// Snapshot is what the AMM knows of the cluster at one instant: every live
// node's store and every object held on more than zero nodes. Policies
// must not modify it.
type Snapshot struct {
	// Nodes by id.
	Nodes map[NodeID]*Node
	// Objects by id.
	Objects map[ObjectID]*Object
}

// Node is one node's store.
type Node struct {
	ID NodeID
	// Capacity and Used are the store's bytes.
	Capacity, Used uint64
	// Retiring: the node is being drained; its objects move elsewhere and
	// nothing new is copied to it.
	Retiring bool
	// Driver marks a driver's node: it runs no tasks, so policies never
	// choose it for a new copy.
	Driver bool
}

// Fraction is the node's store use over its capacity (0 for no capacity).
func (n *Node) Fraction() float64 {
	if n.Capacity == 0 {
		return 0
	}
	return float64(n.Used) / float64(n.Capacity)
}

// Object is one object and its copies.
type Object struct {
	ID   ObjectID
	Size uint64
	// Copies, one per node holding the object, in node order.
	Copies []Copy
	// Replicas is the number of copies the Replicate policy keeps (0: not
	// tracked; AllNodes: one on every eligible node).
	Replicas int
}

// Copy is an object's copy on one node.
type Copy struct {
	Node NodeID
	// Primary: the copy its producer stored (a task's output, a Put); the
	// object's location names it. Other copies were pulled.
	Primary bool
	// Pinned: a task or a Get holds it.
	Pinned bool
	// Reading: it was read within the store's grace period, so a reader
	// may be about to pin it.
	Reading bool
	// Pulling: the copy is being created by a pull (not sealed yet).
	Pulling bool
}

// Busy reports whether the copy is in use (pinned, being read or pulled).
func (c Copy) Busy() bool { return c.Pinned || c.Reading || c.Pulling }

// Copy returns the object's copy on node, if it has one.
func (o *Object) Copy(node NodeID) (Copy, bool) {
	for _, c := range o.Copies {
		if c.Node == node {
			return c, true
		}
	}
	return Copy{}, false
}

// Action is what a suggestion asks for.
type Action uint8

const (
	// ActionDrop: drop the object's copy on the node.
	ActionDrop Action = iota + 1
	// ActionReplicate: the node pulls a copy of the object.
	ActionReplicate
	// ActionMove: the node pulls a copy of the object, then the copy on
	// From is dropped, only if the pull succeeded (a move never ends as
	// a plain drop).
	ActionMove
)

func (a Action) String() string {
	switch a {
	case ActionDrop:
		return "drop"
	case ActionReplicate:
		return "replicate"
	case ActionMove:
		return "move"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Suggestion is one change a policy asks for.
type Suggestion struct {
	Action Action
	Object ObjectID
	// Node is the node whose copy is dropped, or which pulls one (for a
	// move, the destination).
	Node NodeID
	// From is, for a move, the node whose copy goes once Node has one.
	From NodeID
}

func (s Suggestion) String() string {
	if s.Action == ActionMove {
		return fmt.Sprintf("move %s %s->%s", s.Object, s.From, s.Node)
	}
	return fmt.Sprintf("%s %s %s", s.Action, s.Object, s.Node)
}

// Policy says where data should be. Suggest is a pure function of the
// snapshot: it must not modify it, keep it, or do I/O. Suggestions may
// conflict with each other and with other policies'; Decide settles
// them in order (the policies' order, then each policy's).
type Policy interface {
	// Name identifies the policy in counters and logs.
	Name() string
	Suggest(s *Snapshot) []Suggestion
}

// sortedNodes returns the snapshot's nodes in id order.
func (s *Snapshot) sortedNodes() []*Node {
	out := make([]*Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Node) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// sortedObjects returns the snapshot's objects in id order.
func (s *Snapshot) sortedObjects() []*Object {
	out := make([]*Object, 0, len(s.Objects))
	for _, o := range s.Objects {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *Object) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// byLoad orders nodes least loaded first (store fraction, then id).
func byLoad(a, b *Node) int {
	if c := cmp.Compare(a.Fraction(), b.Fraction()); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
