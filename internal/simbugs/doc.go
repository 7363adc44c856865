// Package simbugs holds bugs put into atoll's cores on purpose, for the
// simulator's tests (package sim): each must be found by the simulator
// within a bounded number of seeds and shrunk to a few faults. They exist
// only in binaries built with the simbugs build tag, and only the ones
// named in ATOLL_SIM_BUGS (comma-separated) or Set are on; without the
// tag On is a constant false and the cores' checks compile away.
//
//	go test -tags simbugs ./sim -run TestSeededBugs
//	ATOLL_SIM_BUGS=owner-keeps-dead-borrowers go run -tags simbugs ./cmd/atoll sim -workload mixed -seed N
package simbugs

// Bug names one bug.
type Bug string

// The bugs.
const (
	// OwnerKeepsDeadBorrowers: the owner does not drop what a borrower
	// held when the borrower dies (owner.Table.borrowerDied): the objects
	// leak.
	OwnerKeepsDeadBorrowers Bug = "owner-keeps-dead-borrowers"
	// RayletRunsLateCopies: the raylet takes a copy of a submission that
	// arrives once its attempt left the node (forwarded, or ended) as a
	// new one (the fix of raylet.Core.took undone): the attempt runs
	// twice.
	RayletRunsLateCopies Bug = "raylet-runs-late-copies"
	// HostIgnoresCallerOrder: the actor host starts calls as they arrive,
	// not in each caller's order (workerproto.HostCore.Arrive).
	HostIgnoresCallerOrder Bug = "host-ignores-caller-order"
	// OwnerIgnoresBorrowers: the owner takes no reference for what a
	// borrower reports it holds (owner.Table.applyBorrows): it frees an
	// object a borrower still reads.
	OwnerIgnoresBorrowers Bug = "owner-ignores-borrowers"
	// NoticesNotRepaired: a node that misses a numbered notice never asks
	// for it again (the fix of cluster's notices undone): freed objects
	// leak on it.
	NoticesNotRepaired Bug = "notices-not-repaired"
)

// All lists the bugs.
var All = []Bug{OwnerKeepsDeadBorrowers, OwnerIgnoresBorrowers, RayletRunsLateCopies, HostIgnoresCallerOrder, NoticesNotRepaired}

// EnvBugs names the environment variable that turns bugs on.
const EnvBugs = "ATOLL_SIM_BUGS"
