package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TestListPlacementGroups: `atoll list placement-groups` prints each
// group's strategy, state, bundles with their nodes and why it waits, as a
// table and as JSON.
func TestListPlacementGroups(t *testing.T) {
	n1 := bytes.Repeat([]byte{0xaa}, 16)
	groups := []*atollpb.PlacementGroupInfo{
		{PlacementGroupId: bytes.Repeat([]byte{0x11}, 16), Name: "gang", Strategy: atollpb.PlacementStrategy_STRICT_SPREAD,
			State: atollpb.PlacementGroupState_PLACEMENT_GROUP_PENDING, Infeasible: true, Reason: "STRICT_SPREAD: 2 bundles need 2 nodes",
			Bundles:     []*atollpb.Bundle{{Resources: map[string]float64{"CPU": 1}}, {Resources: map[string]float64{"CPU": 1}}},
			BundleNodes: [][]byte{nil, nil}},
		{PlacementGroupId: bytes.Repeat([]byte{0x22}, 16), Strategy: atollpb.PlacementStrategy_PACK,
			State:       atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED,
			Bundles:     []*atollpb.Bundle{{Resources: map[string]float64{"CPU": 2, "GPU": 1}}},
			BundleNodes: [][]byte{n1}, CreateTimeUnixMs: 1, CreatedTimeUnixMs: 2},
	}
	var out bytes.Buffer
	if err := printPlacementGroups(&out, groups, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, want := range []string{
		`^GROUP +NAME +STRATEGY +STATE +BUNDLES +NODES +WHY$`,
		`^11111111 +gang +STRICT_SPREAD +PENDING +\{CPU 1\} \{CPU 1\} +- - +infeasible: STRICT_SPREAD: 2 bundles need 2 nodes$`,
		`^22222222 +- +PACK +CREATED +\{CPU 2, GPU 1\} +aaaaaaaa +-$`,
	} {
		if i >= len(lines) || !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d of\n%s\ndoes not match %q", i, out.String(), want)
		}
	}
	out.Reset()
	if err := printPlacementGroups(&out, groups, true); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []groupRow `json:"placement_groups"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Groups) != 2 || doc.Groups[1].BundleNodes[0] != strings.Repeat("aa", 16) ||
		!doc.Groups[0].Infeasible || doc.Groups[1].State != "CREATED" {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
}
