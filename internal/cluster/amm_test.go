package cluster

import (
	"encoding/hex"
	"testing"

	"google.golang.org/protobuf/proto"

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
		if err := ValidNodeObjects(r, []ids.NodeID{driver, n1, n2}[i]); err != nil {
			t.Fatal(err)
		}
	}
	if ValidNodeObjects(invs[1], n2) == nil {
		t.Fatal("an inventory answered by another node was accepted")
	}
	bad := inv(n1, false, &atollpb.ObjectHolding{ObjectId: []byte{1, 2}})
	if ValidNodeObjects(bad, n1) == nil {
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

// TestAMMReplicateRequest: a tracked count reaches the snapshot, Replicate
// asks for the missing copies, and each becomes a request the target node
// accepts (the primary as its source, the owner and codec of the primary's
// holding); malformed requests and counts are refused; a count is
// forgotten only when a complete round finds the object nowhere.
func TestAMMReplicateRequest(t *testing.T) {
	driver, n1, n2 := ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID()
	obj := ids.PutObjectID(ids.NewTaskID(), 1)
	ownerWorker := ids.NewWorkerID()
	hexOf := func(n ids.NodeID) string { return hex.EncodeToString(n.Bytes()) }
	inv := func(node ids.NodeID, isDriver bool, hs ...*atollpb.ObjectHolding) *atollpb.NodeObjects {
		r := &atollpb.NodeObjects{NodeId: node.Bytes(), IsDriver: isDriver, List: &atollpb.ObjectList{CapacityBytes: 100, UsedBytes: 10, Objects: hs}}
		for range hs {
			r.OwnerNodes = append(r.OwnerNodes, hexOf(driver))
		}
		return r
	}
	invs := []*atollpb.NodeObjects{
		inv(driver, true, &atollpb.ObjectHolding{ObjectId: obj.Bytes(), Size: 10, Sealed: true, OwnerId: ownerWorker.Bytes(), Codec: atollpb.Codec_CODEC_BYTES}),
		inv(n1, false), inv(n2, false),
	}
	a := &AMM{cfg: AMMConfig{ReplicateTimeout: DefaultReplicateTimeout}, replicas: map[amm.ObjectID]int{}}
	oid := amm.ObjectID(hex.EncodeToString(obj.Bytes()))
	for _, bad := range []struct {
		id string
		n  int
	}{{"zz", 2}, {hex.EncodeToString([]byte{1, 2}), 2}, {string(oid), -2}, {string(oid), maxReplicaCount + 1}} {
		if a.SetReplicas(bad.id, bad.n) == nil {
			t.Fatalf("SetReplicas(%q, %d) accepted", bad.id, bad.n)
		}
	}
	if err := a.SetReplicas(string(oid), 2); err != nil {
		t.Fatal(err)
	}
	s, owners := BuildSnapshot(invs)
	a.tracked(s, true)
	if s.Objects[oid].Replicas != 2 {
		t.Fatalf("tracked count not in the snapshot: %+v", s.Objects[oid])
	}
	d := amm.Run(s, []amm.Policy{amm.Replicate{}, amm.ReduceReplicas{}}, amm.Limits{})
	if len(d.Replicas) != 1 || len(d.Drops) != 0 {
		t.Fatalf("decision %+v, want one replica", d)
	}
	req, target, err := a.replicateRequest(s, d.Replicas[0], owners, holdings(invs))
	if err != nil || hexOf(target) != string(d.Replicas[0].Node) || target == driver {
		t.Fatalf("request to %s: %v", target.Short(), err)
	}
	ref := req.Ref
	if ids.MustFromBytes(ref.NodeId) != driver || ref.OwnerAddress != hexOf(driver) || ids.MustFromBytes(ref.OwnerId) != ownerWorker ||
		ref.Codec != atollpb.Codec_CODEC_BYTES || ref.Size != 10 {
		t.Fatalf("replicate ref %+v", ref)
	}
	if err := validReplicate(req); err != nil {
		t.Fatalf("a valid request refused: %v", err)
	}
	for name, mut := range map[string]func(r *atollpb.ReplicateRequest){
		"no ref":         func(r *atollpb.ReplicateRequest) { r.Ref = nil },
		"bad object":     func(r *atollpb.ReplicateRequest) { r.Ref.ObjectId = []byte{1} },
		"bad node":       func(r *atollpb.ReplicateRequest) { r.Ref.NodeId = nil },
		"bad owner":      func(r *atollpb.ReplicateRequest) { r.Ref.OwnerId = []byte{1, 2, 3} },
		"unknown codec":  func(r *atollpb.ReplicateRequest) { r.Ref.Codec = 1 << 20 },
		"negative wait":  func(r *atollpb.ReplicateRequest) { r.TimeoutMs = -1 },
		"long owner hex": func(r *atollpb.ReplicateRequest) { r.Ref.OwnerAddress += "00" },
	} {
		bad := proto.Clone(req).(*atollpb.ReplicateRequest)
		mut(bad)
		if validReplicate(bad) == nil {
			t.Fatalf("replicate request with %s accepted", name)
		}
	}

	// Gone from every node: kept after an incomplete round, forgotten
	// after a complete one.
	empty, _ := BuildSnapshot([]*atollpb.NodeObjects{inv(n1, false)})
	a.tracked(empty, false)
	if a.Stats().Tracked != 1 {
		t.Fatal("a count forgotten after an incomplete round")
	}
	a.tracked(empty, true)
	if a.Stats().Tracked != 0 {
		t.Fatal("the count of an object no node holds was kept")
	}
}
