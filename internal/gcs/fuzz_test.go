package gcs

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// FuzzRequests sends arbitrary bytes as GCS requests (seeded with a valid
// request of each op) to a real GCS on an embedded NATS with JetStream:
// every request gets a decodable reply (a typed error for a bad one), and
// the GCS still answers after it. Each is sent on the general subject or
// on a node's own registration subject.
func FuzzRequests(f *testing.F) {
	e := newEnv(f)
	node, actor, job := ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID()
	for _, req := range []*atollpb.GcsRequest{
		{Op: &atollpb.GcsRequest_RegisterNode{RegisterNode: &atollpb.NodeInfo{NodeId: node.Bytes(), Address: "n:1", Resources: map[string]float64{"CPU": 1}}}},
		{Op: &atollpb.GcsRequest_ReregisterNode{ReregisterNode: &atollpb.NodeInfo{NodeId: node.Bytes(), Address: "n:1"}}},
		{Op: &atollpb.GcsRequest_MarkNodeDead{MarkNodeDead: &atollpb.MarkNodeDead{NodeId: node.Bytes(), Reason: "fuzz"}}},
		{Op: &atollpb.GcsRequest_ListNodes{ListNodes: &atollpb.ListNodes{}}},
		{Op: &atollpb.GcsRequest_RegisterActor{RegisterActor: &atollpb.ActorInfo{ActorId: actor.Bytes(), Name: "a", Namespace: "ns", NodeId: node.Bytes()}}},
		{Op: &atollpb.GcsRequest_UpdateActor{UpdateActor: &atollpb.ActorInfo{ActorId: actor.Bytes(), State: atollpb.ActorState_ACTOR_ALIVE}}},
		{Op: &atollpb.GcsRequest_GetActor{GetActor: actor.Bytes()}},
		{Op: &atollpb.GcsRequest_GetNamedActor{GetNamedActor: &atollpb.GetNamedActor{Name: "a", Namespace: "ns"}}},
		{Op: &atollpb.GcsRequest_ListActors{ListActors: &atollpb.ListActors{}}},
		{Op: &atollpb.GcsRequest_AddJob{AddJob: &atollpb.JobInfo{JobId: job.Bytes()}}},
		{Op: &atollpb.GcsRequest_FinishJob{FinishJob: job.Bytes()}},
		{Op: &atollpb.GcsRequest_ListJobs{ListJobs: &atollpb.ListJobs{}}},
	} {
		data, _ := proto.Marshal(req)
		f.Add(data, false)
		f.Add(data, true)
	}
	f.Add([]byte{}, false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, onNode bool) {
		subject := RequestSubject(DefaultPrefix)
		if onNode {
			subject = NodeRequestSubject(DefaultPrefix, node)
		}
		msg, err := e.nc.Request(subject, data, 10*time.Second)
		if err != nil {
			t.Fatalf("no reply: %v", err)
		}
		var reply atollpb.GcsReply
		if err := proto.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatalf("undecodable reply: %v", err)
		}
		var req atollpb.GcsRequest
		if proto.Unmarshal(data, &req) != nil && reply.Error == nil {
			t.Fatal("an undecodable request got no error")
		}
	})
}
