package cluster

import (
	"encoding/hex"
	"testing"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestAMMBuildSnapshot: the nodes' inventories become the AMM's snapshot
// (a store's copy flag decides the primary, an unsealed copy is being
// pulled), a malformed inventory is refused, and Decide on the result
// keeps the primary and the pinned copy.
func TestAMMBuildSnapshot(t *testing.T) {
	driver, n1, n2 := ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID()
	obj := ids.PutObjectID(ids.NewTaskID(), 1)
	owner := hex.EncodeToString(driver.Bytes())
	inv := func(node ids.NodeID, isDriver bool, h *atollpb.ObjectHolding) *atollpb.NodeObjects {
		return &atollpb.NodeObjects{NodeId: node.Bytes(), IsDriver: isDriver, OwnerNodes: []string{owner},
			List: &atollpb.ObjectList{CapacityBytes: 100, UsedBytes: 10, Objects: []*atollpb.ObjectHolding{h}}}
	}
	invs := []*atollpb.NodeObjects{
		inv(driver, true, &atollpb.ObjectHolding{ObjectId: obj.Bytes(), Size: 10, Sealed: true}),
		inv(n1, false, &atollpb.ObjectHolding{ObjectId: obj.Bytes(), Size: 10, Copy: true, Sealed: true, Pinned: true}),
		inv(n2, false, &atollpb.ObjectHolding{ObjectId: obj.Bytes(), Size: 10, Copy: true, Sealed: true}),
	}
	for i, r := range invs {
		if err := validNodeObjects(r, []ids.NodeID{driver, n1, n2}[i]); err != nil {
			t.Fatal(err)
		}
	}
	if validNodeObjects(invs[1], n2) == nil {
		t.Fatal("an inventory answered by another node was accepted")
	}
	bad := inv(n1, false, &atollpb.ObjectHolding{ObjectId: []byte{1, 2}})
	if validNodeObjects(bad, n1) == nil {
		t.Fatal("an inventory with a malformed object id was accepted")
	}
	s, owners := BuildSnapshot(invs)
	oid := amm.ObjectID(hex.EncodeToString(obj.Bytes()))
	o := s.Objects[oid]
	if o == nil || len(o.Copies) != 3 || owners[oid] != owner || !s.Nodes[amm.NodeID(owner)].Driver {
		t.Fatalf("snapshot %+v, owners %v", o, owners)
	}
	if c, _ := o.Copy(amm.NodeID(owner)); !c.Primary {
		t.Fatal("the copy that was not pulled is not the primary")
	}
	d := amm.Run(s, []amm.Policy{amm.ReduceReplicas{}}, amm.Limits{})
	want := amm.Suggestion{Action: amm.ActionDrop, Object: oid, Node: amm.NodeID(hex.EncodeToString(n2.Bytes()))}
	if len(d.Drops) != 1 || d.Drops[0] != want {
		t.Fatalf("drops %v, want only %v", d.Drops, want)
	}
}

// TestAMMFromEnv: the environment turns the AMM on or off and sets its
// interval; bad values are typed errors, not silently ignored.
func TestAMMFromEnv(t *testing.T) {
	t.Setenv(EnvAMM, "1")
	t.Setenv(EnvAMMInterval, "250ms")
	on, d, err := AMMFromEnv(false, 0)
	if err != nil || !on || d.Milliseconds() != 250 {
		t.Fatalf("AMMFromEnv: %v %v %v", on, d, err)
	}
	t.Setenv(EnvAMM, "maybe")
	if _, _, err := AMMFromEnv(false, 0); err == nil {
		t.Fatal("ATOLL_AMM=maybe accepted")
	}
	t.Setenv(EnvAMM, "0")
	t.Setenv(EnvAMMInterval, "-1s")
	if _, _, err := AMMFromEnv(true, 0); err == nil {
		t.Fatal("a negative interval accepted")
	}
	if _, err := NewAMM(AMMConfig{}); err == nil {
		t.Fatal("NewAMM without a connection accepted")
	}
}
