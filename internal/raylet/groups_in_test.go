package raylet

import (
	"slices"
	"testing"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestGroupsIn: the groups a demand names are found whether it is placed
// in one bundle or in any, each once; plain names name none.
func TestGroupsIn(t *testing.T) {
	a, b := ids.NewPlacementGroupID(), ids.NewPlacementGroupID()
	demand := BundleDemand(Resources{CPU: 1, "memory": 100}, a, 2)
	for k, v := range BundleDemand(Resources{CPU: 1}, b, -1) {
		demand[k] = v
	}
	demand[CPU] = 1
	got := GroupsIn(demand)
	slices.SortFunc(got, func(x, y ids.ID16) int { return slices.Compare(x[:], y[:]) })
	want := []ids.ID16{a, b}
	slices.SortFunc(want, func(x, y ids.ID16) int { return slices.Compare(x[:], y[:]) })
	if !slices.Equal(got, want) {
		t.Fatalf("GroupsIn(%v) = %v, want %v", demand, got, want)
	}
	if got := GroupsIn(Resources{CPU: 2, "GPU": 1}); len(got) != 0 {
		t.Fatalf("GroupsIn of plain resources = %v, want none", got)
	}
	if got := GroupsIn(Resources{"CPU_group_nothex": 1}); len(got) != 0 {
		t.Fatalf("GroupsIn of a malformed name = %v, want none", got)
	}
}
