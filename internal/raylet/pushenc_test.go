package raylet

import (
	"encoding/binary"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

func sampleSpec(i int) *atollpb.TaskSpec {
	return &atollpb.TaskSpec{
		TaskId: []byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, JobId: []byte("job-0123456789ab"),
		Type: atollpb.TaskType_NORMAL_TASK, Function: "pkg.noop", Name: "pkg.noop", NumReturns: 1,
		Resources: map[string]float64{"CPU": 1, "memory": 1 << 20}, MaxRetries: 3, OwnerId: []byte("owner-0123456789"),
		OwnerAddress: "node", WorkerBinary: "/bin/w", WorkerBinarySha256: []byte("sha"),
		Args:    []*atollpb.TaskArg{{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Codec: atollpb.Codec_CODEC_GOB, Kind: &atollpb.Value_Inline{Inline: []byte{3, 4, 0, byte(2 * i)}}}}}},
		Attempt: int32(i % 3), Trace: &atollpb.TraceContext{Traceparent: "00-abc-def-01"},
	}
}

// decodePushes reads the frames PushEncoder wrote back as Frames.
func decodePushes(t *testing.T, b []byte) []*atollpb.TaskSpec {
	t.Helper()
	var out []*atollpb.TaskSpec
	for len(b) > 0 {
		n := int(binary.BigEndian.Uint32(b))
		f := &atollpb.Frame{}
		if err := proto.Unmarshal(b[4:4+n], f); err != nil {
			t.Fatal(err)
		}
		out = append(out, f.GetPushTask().GetSpec())
		b = b[4+n:]
	}
	return out
}

// A frame written from a shape and a task's own fields reads back as the
// spec it was made from, shape after shape.
func TestPushEncoderRoundTrip(t *testing.T) {
	var e PushEncoder
	var specs []*atollpb.TaskSpec
	for i := range 20 {
		s := sampleSpec(i)
		if i%4 == 1 {
			s.Name = "other" // another shape
		}
		if i%5 == 2 {
			s.SequenceNumber, s.ActorId, s.CallerId, s.Type = uint64(i), []byte("actor"), []byte("caller"), atollpb.TaskType_ACTOR_TASK
		}
		if i == 7 {
			s.ActorCreation = &atollpb.ActorCreationSpec{ActorType: "A"} // marshalled whole
		}
		specs = append(specs, s)
	}
	var shapes specpack.Shapes
	for i, s := range specs {
		if p := shapes.Pack(s); p != nil && i%3 == 0 {
			e.AddPacked(p) // the owner's packed specs push as they are
		} else {
			e.Add(s)
		}
	}
	buf, err := e.AppendFrames(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := decodePushes(t, buf)
	if len(got) != len(specs) {
		t.Fatalf("%d frames for %d specs", len(got), len(specs))
	}
	for i := range specs {
		if !proto.Equal(got[i], specs[i]) {
			t.Fatalf("spec %d: got %v, want %v", i, got[i], specs[i])
		}
	}
}

// Encoding a task of a known shape allocates nothing.
func TestPushEncoderDoesNotAllocate(t *testing.T) {
	var e PushEncoder
	spec := sampleSpec(1)
	e.Add(spec)
	buf := make([]byte, 0, 4096)
	buf, _ = e.AppendFrames(buf[:0]) // the shape
	allocs := testing.AllocsPerRun(100, func() {
		spec.Attempt++
		buf, _ = e.AppendFrames(buf[:0])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per push", allocs)
	}
}

func BenchmarkPushEncoder(b *testing.B) {
	var e PushEncoder
	spec := sampleSpec(1)
	e.Add(spec)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.AppendFrames(buf[:0])
	}
}

// BenchmarkMarshalPush is the frame made and marshalled as before, for
// comparison.
func BenchmarkMarshalPush(b *testing.B) {
	spec := sampleSpec(1)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		f := &atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: spec}}}
		buf, _ = proto.MarshalOptions{}.MarshalAppend(buf[:0], f)
	}
}
