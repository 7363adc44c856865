package owner

import (
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TestSpecSizeIsProtoSize checks the lineage budget's count of a spec's
// bytes against proto.Size on specs of every shape the owner keeps, with
// every field set in some.
func TestSpecSizeIsProtoSize(t *testing.T) {
	// specSize counts TaskSpec's fields one by one: a new field needs
	// counting there (and setting below).
	if n := (&atollpb.TaskSpec{}).ProtoReflect().Descriptor().Fields().Len(); n != 28 {
		t.Fatalf("TaskSpec has %d fields, specSize counts 28", n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	str := func(n int) string { return strings.Repeat("x", r.IntN(n)) }
	id := func() []byte { return make([]byte, 16) }
	for i := range 500 {
		s := &atollpb.TaskSpec{TaskId: id(), JobId: id()[:4], OwnerId: id(), Function: str(40), Name: str(40),
			OwnerAddress: str(30), NumReturns: int32(r.IntN(4)), MaxRetries: int32(r.IntN(5)), Attempt: int32(r.IntN(3)),
			Resources: map[string]float64{}}
		for range r.IntN(4) {
			s.Resources[str(10)+"r"] = r.Float64() * 8
		}
		for range r.IntN(5) {
			if r.IntN(2) == 0 {
				s.Args = append(s.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: make([]byte, r.IntN(300))}}}})
			} else {
				s.Args = append(s.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: id(), OwnerAddress: str(20)}}})
			}
		}
		if i%3 == 0 {
			s.Trace = &atollpb.TraceContext{Traceparent: str(55)}
			s.ArgProducers = []*atollpb.TraceContext{{Traceparent: str(55)}}
		}
		if i%5 == 0 {
			s.RetryExceptions, s.Generator, s.GeneratorBackpressure = true, true, r.Int32N(300)
			s.NumDependencies, s.WorkerBinary, s.WorkerBinarySha256 = r.Int32N(200), str(40), id()
			s.ConcurrencyGroup, s.CallerId, s.MaxRetries = str(8), id(), -1
			s.RetryErrors = []string{str(30), str(200)}
			s.Borrowed = []*atollpb.ReturnObject{{ObjectId: id()}}
			s.Scheduling = &atollpb.SchedulingStrategy{NodeId: id()}
		}
		if i%7 == 0 {
			s.Type = atollpb.TaskType_ACTOR_CREATION_TASK
			s.ActorId = id()
			s.ActorCreation = &atollpb.ActorCreationSpec{ActorType: str(20), Name: str(10), MaxRestarts: 3}
			s.SequenceNumber = r.Uint64()
		}
		got, want := specSize(s), proto.Size(s)
		if got != want {
			t.Fatalf("spec %d: specSize %d, proto.Size %d", i, got, want)
		}
	}
}
