package dashboard

import (
	"context"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
)

// placementView is /api/placement-groups: counts by state and the groups,
// live ones first (pending, rescheduling, created), then the removed
// ones the head remembers, newest first.
type placementView struct {
	Counts map[string]int `json:"counts"`
	Groups []groupView    `json:"groups"`
}

type groupView struct {
	ID          string               `json:"placement_group_id"`
	Name        string               `json:"name,omitempty"`
	Namespace   string               `json:"namespace,omitempty"`
	Strategy    string               `json:"strategy"`
	State       string               `json:"state"` // pending, created, rescheduling, removed
	Bundles     []map[string]float64 `json:"bundles"`
	BundleNodes []string             `json:"bundle_nodes"`
	Reason      string               `json:"reason,omitempty"`
	Infeasible  bool                 `json:"infeasible,omitempty"`
	Detached    bool                 `json:"detached,omitempty"`
	Reschedules int32                `json:"reschedules,omitempty"`
	Created     string               `json:"create_time,omitempty"`
}

func groupState(s atollpb.PlacementGroupState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "PLACEMENT_GROUP_"))
}

func (a *api) placementGroups(ctx context.Context, _ *http.Request) (any, error) {
	infos, err := a.src.PlacementGroups(ctx)
	if err != nil {
		return nil, err
	}
	v := placementView{Counts: map[string]int{}, Groups: []groupView{}}
	for _, g := range infos {
		gv := groupView{ID: hex.EncodeToString(g.PlacementGroupId), Name: g.Name, Namespace: g.Namespace, Strategy: g.Strategy.String(),
			State: groupState(g.State), Reason: g.Reason, Infeasible: g.Infeasible, Detached: g.Detached, Reschedules: g.Reschedules}
		if g.CreateTimeUnixMs > 0 {
			gv.Created = time.UnixMilli(g.CreateTimeUnixMs).UTC().Format(time.RFC3339Nano)
		}
		for i, b := range g.Bundles {
			gv.Bundles = append(gv.Bundles, b.GetResources())
			node := ""
			if i < len(g.BundleNodes) && len(g.BundleNodes[i]) > 0 {
				node = hex.EncodeToString(g.BundleNodes[i])
			}
			gv.BundleNodes = append(gv.BundleNodes, node)
		}
		v.Counts[gv.State]++
		v.Groups = append(v.Groups, gv)
	}
	rank := func(s string) int { return slices.Index([]string{"pending", "rescheduling", "created", "removed"}, s) }
	slices.SortStableFunc(v.Groups, func(x, y groupView) int {
		if r := rank(x.State) - rank(y.State); r != 0 {
			return r
		}
		return strings.Compare(y.Created, x.Created)
	})
	return v, nil
}
