package cluster

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// fuzzSubjects are the subjects a node's gateway reads from NATS that the
// fuzzer writes to (crash is left out: it kills the process by design;
// replicate and stats need the parts this harness does not start: the
// fetcher and the store's answers).
var fuzzSubjects = []string{"task", "call", "result", "held", "cancel", "copy", "locate", "drain", "leave", "load", "owners", "free", "kill", "borrows", "genack"}

func fuzzSubject(n *testNode, kind uint8) string {
	switch k := fuzzSubjects[int(kind)%len(fuzzSubjects)]; k {
	case "load":
		return loadSubject(DefaultPrefix, n.id)
	case "owners":
		return ownersExitedSubject(DefaultPrefix)
	case "free":
		return freeSubject(DefaultPrefix)
	case "kill":
		return killSubject(DefaultPrefix)
	default:
		return nodeSubject(DefaultPrefix, n.id, k)
	}
}

// FuzzGatewayMessages publishes arbitrary bytes on the subjects a node's
// gateway reads and checks that it neither crashes (a panic in a NATS
// callback or a goroutine ends the fuzzing process) nor restarts its
// actor, and still answers. The seeds are a valid message of each kind.
func FuzzGatewayMessages(f *testing.F) {
	ns := startNATS(f)
	a := startNode(f, ns, nil)
	b := startNode(f, ns, nil)
	task, obj := ids.NewTaskID(), ids.ReturnObjectID(ids.NewTaskID(), 0)
	spec := &atollpb.TaskSpec{TaskId: task.Bytes(), Name: "t", NumReturns: 1,
		Args: []*atollpb.TaskArg{{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: obj.Bytes(), NodeId: a.id.Bytes()}}}}}
	seeds := map[string]proto.Message{
		"task":   &atollpb.ForwardTask{Spec: spec, OriginNode: a.id.Bytes(), Hops: 1},
		"call":   &atollpb.ForwardActorCall{Spec: spec, OriginNode: a.id.Bytes(), Address: "host"},
		"result": &atollpb.ForwardedResult{Result: &atollpb.TaskResult{TaskId: task.Bytes()}, FromNode: a.id.Bytes()},
		"held":   &atollpb.HeldWork{FromNode: a.id.Bytes(), Attempts: []*atollpb.AttemptKey{{TaskId: task.Bytes()}}},
		"cancel": &atollpb.ForwardCancel{TaskId: task.Bytes()},
		"genack": &atollpb.ForwardGeneratorAck{Ack: &atollpb.GeneratorAck{TaskId: task.Bytes(), Consumed: 1}, Hops: 1},
		"copy":   &atollpb.ObjectCopies{ObjectId: obj.Bytes(), NodeIds: [][]byte{a.id.Bytes()}},
		"drain":  &atollpb.DrainRequest{NodeId: ids.NewNodeID().Bytes()},
		"leave":  &atollpb.LeaveRequest{ObjectIds: [][]byte{obj.Bytes()}},
		"load":   &atollpb.NodeLoad{NodeId: a.id.Bytes(), Total: map[string]float64{"CPU": 1}, Seq: 1},
		"owners": &atollpb.OwnersExited{NodeId: a.id.Bytes(), WorkerIds: [][]byte{ids.NewNodeID().Bytes()}},
		"free":   &atollpb.FreeObjects{ObjectIds: [][]byte{obj.Bytes()}},
		"kill":   &atollpb.KillActor{ActorId: ids.NewNodeID().Bytes()},
		"borrows": &atollpb.BorrowReport{OwnerId: ids.NewWorkerID().Bytes(), OwnerNode: a.id.Bytes(),
			BorrowerWorkerId: ids.NewWorkerID().Bytes(), Borrows: [][]byte{obj.Bytes()}, BorrowsSeq: 1},
	}
	for i, k := range fuzzSubjects {
		if m := seeds[k]; m != nil {
			data, _ := proto.Marshal(m)
			f.Add(uint8(i), data)
		}
	}
	f.Add(uint8(5), obj.Bytes()) // a locate request's body is an object id
	f.Add(uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		if err := a.nc.Publish(fuzzSubject(b, kind), data); err != nil {
			t.Fatal(err)
		}
		if err := a.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		res, err := b.system.Root.RequestFuture(b.gw.pid, &getCounters{}, waitTimeout).Result()
		if err != nil {
			t.Fatalf("the gateway does not answer: %v", err)
		}
		if c := res.(leaseCounters); c.restarts != 0 {
			t.Fatalf("the gateway restarted %d times", c.restarts)
		}
	})
}

func TestCheckPullSize(t *testing.T) {
	for _, c := range []struct {
		declared, want uint64
		ok             bool
	}{{10, 10, true}, {10, 0, true}, {0, 0, true}, {1 << 62, 10, false}, {9, 10, false}} {
		if err := checkPullSize(c.declared, c.want); (err == nil) != c.ok {
			t.Errorf("checkPullSize(%d, %d): %v", c.declared, c.want, err)
		}
	}
}
