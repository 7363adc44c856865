package specpack

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Every field of TaskSpec is either a task's own or its shape's: a field
// added to TaskSpec must be classified, or packing would drop it.
func TestEveryFieldClassified(t *testing.T) {
	fields := (&atollpb.TaskSpec{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		n := fields.Get(i).Number()
		own, shared := slices.Contains(workerconn.SpecOwnFields, n), slices.Contains(workerconn.SpecShapeFields, n)
		if own == shared {
			t.Errorf("TaskSpec field %s (%d): own %v, shared %v: classify it in workerconn.SpecOwnFields or SpecShapeFields",
				fields.Get(i).Name(), n, own, shared)
		}
	}
}

// randomSpec is a spec of one of kinds shapes, with random own fields.
func randomSpec(r *rand.Rand, kinds int) *atollpb.TaskSpec {
	k := r.IntN(kinds)
	id := make([]byte, 16)
	for i := range id {
		id[i] = byte(r.UintN(256))
	}
	s := &atollpb.TaskSpec{
		TaskId: id, JobId: []byte("job-0123456789ab"), Type: atollpb.TaskType_NORMAL_TASK,
		Function: fmt.Sprintf("pkg.f%d", k), Name: fmt.Sprintf("pkg.f%d", k), NumReturns: int32(1 + k%2),
		Resources: map[string]float64{"CPU": 1, "memory": float64(k << 20)}, MaxRetries: 3, RetryExceptions: k%3 == 0,
		OwnerId: []byte("owner-0123456789"), OwnerAddress: "node/owner", WorkerBinary: "/bin/w", WorkerBinarySha256: []byte("sha"),
		Attempt: int32(r.IntN(3)),
	}
	if k%4 == 3 {
		s.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_SPREAD}
	}
	if k%3 == 0 && k%2 == 1 {
		s.RetryErrors = []string{"pkg: a read may pass", fmt.Sprint(k)}
	}
	for range r.IntN(4) {
		v := make([]byte, r.IntN(40))
		for i := range v {
			v[i] = byte(r.UintN(256))
		}
		s.Args = append(s.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{
			Codec: atollpb.Codec_CODEC_GOB, Kind: &atollpb.Value_Inline{Inline: v}}}})
	}
	if r.IntN(3) == 0 {
		s.Trace = &atollpb.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	}
	if r.IntN(4) == 0 {
		s.SequenceNumber, s.NumDependencies = r.Uint64N(1000), int32(r.IntN(3))
		s.ArgProducers = []*atollpb.TraceContext{{Traceparent: "p"}}
		s.Borrowed = []*atollpb.ReturnObject{{ObjectId: []byte("object-0123456789ab")}}
	}
	return s
}

// A packed spec unpacks to the spec it was packed from, its encoding is
// the spec's (as long, and read back the same), and its accessors agree.
func TestPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var shapes Shapes
	for i := range 2000 {
		spec := randomSpec(r, 5)
		p := shapes.Pack(spec)
		if p == nil {
			t.Fatalf("spec %d not packed", i)
		}
		if got := p.Unpack(); !proto.Equal(got, spec) {
			t.Fatalf("spec %d: unpacked %v, want %v", i, got, spec)
		}
		if p.Size() != proto.Size(spec) {
			t.Fatalf("spec %d: size %d, proto.Size %d", i, p.Size(), proto.Size(spec))
		}
		read := &atollpb.TaskSpec{}
		if err := proto.Unmarshal(p.AppendTo(nil), read); err != nil || !proto.Equal(read, spec) {
			t.Fatalf("spec %d: encoding reads back as %v (%v)", i, read, err)
		}
		if !bytes.Equal(p.TaskID(), spec.TaskId) || p.Attempt() != spec.Attempt || !proto.Equal(p.Trace(), spec.Trace) {
			t.Fatalf("spec %d: id %x attempt %d trace %v", i, p.TaskID(), p.Attempt(), p.Trace())
		}
		if sh := p.Shape(); sh.Function != spec.Function || sh.Name != spec.Name || sh.TaskId != nil || sh.Args != nil {
			t.Fatalf("spec %d: shape %v", i, sh)
		}
	}
	if len(shapes.list) != 5 {
		t.Fatalf("%d shapes kept for 5 kinds", len(shapes.list))
	}
}

// Specs of one kind share one shape; a spec changed after packing does
// not change what was packed.
func TestPackSharesShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var shapes Shapes
	a, b := randomSpec(r, 1), randomSpec(r, 1)
	pa, pb := shapes.Pack(a), shapes.Pack(b)
	if pa.shape != pb.shape {
		t.Fatal("two specs of one kind got two shapes")
	}
	want := proto.CloneOf(a)
	a.Name, a.Resources["CPU"], a.TaskId[0] = "changed", 7, a.TaskId[0]+1
	if got := pa.Unpack(); !proto.Equal(got, want) {
		t.Fatalf("packed spec changed with its source: %v", got)
	}
	c := proto.CloneOf(b)
	c.MaxRetries = 9
	if shapes.Pack(c).shape == pb.shape {
		t.Fatal("a spec of another kind shares a shape")
	}
	d := proto.CloneOf(b)
	d.RetryExceptions, d.RetryErrors = true, []string{"pkg: one error"}
	pd := shapes.Pack(d)
	d.RetryErrors[0] = "pkg: another"
	if pd.shape == pb.shape {
		t.Fatal("a spec retrying only some errors shares a shape with one retrying all")
	}
	if got := pd.Unpack().RetryErrors[0]; got != "pkg: one error" {
		t.Fatalf("the packed spec's retried error changed with its source: %q", got)
	}
	e := proto.CloneOf(b)
	e.RetryExceptions, e.RetryErrors = true, []string{"pkg: another"}
	if shapes.Pack(e).shape == pd.shape {
		t.Fatal("specs retrying different errors share a shape")
	}
}

// Shapes keeps at most maxShapes, most recent first.
func TestShapesBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var shapes Shapes
	for range 100 {
		shapes.Pack(randomSpec(r, 50))
	}
	if len(shapes.list) > maxShapes {
		t.Fatalf("%d shapes kept", len(shapes.list))
	}
	s := randomSpec(r, 1)
	s.Function = "last"
	if shapes.Pack(s).shape != shapes.list[0] {
		t.Fatal("the latest shape is not first")
	}
}

// An actor's creation, or a spec with fields this build does not know,
// is not packed.
func TestUnsplittable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var shapes Shapes
	s := randomSpec(r, 1)
	s.ActorCreation = &atollpb.ActorCreationSpec{ActorType: "A"}
	if shapes.Pack(s) != nil {
		t.Fatal("an actor's creation was packed")
	}
	s = randomSpec(r, 1)
	s.ProtoReflect().SetUnknown([]byte{0xf8, 0x07, 0x01}) // field 127, varint 1
	if shapes.Pack(s) != nil {
		t.Fatal("a spec with an unknown field was packed")
	}
}

func TestLeasable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	base := func() *atollpb.TaskSpec {
		s := randomSpec(r, 1)
		s.SequenceNumber, s.NumDependencies, s.ArgProducers, s.Borrowed = 0, 0, nil, nil
		return s
	}
	if !Leasable(base()) {
		t.Fatal("a plain task is not leasable")
	}
	for name, change := range map[string]func(*atollpb.TaskSpec){
		"actor call": func(s *atollpb.TaskSpec) { s.Type = atollpb.TaskType_ACTOR_TASK },
		"dependency": func(s *atollpb.TaskSpec) { s.NumDependencies = 1 },
		"borrowed":   func(s *atollpb.TaskSpec) { s.Borrowed = []*atollpb.ReturnObject{{}} },
		"generator":  func(s *atollpb.TaskSpec) { s.Generator = true },
		"spread": func(s *atollpb.TaskSpec) {
			s.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_SPREAD}
		},
		"ref argument": func(s *atollpb.TaskSpec) {
			s.Args = append(s.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: []byte("o")}}})
		},
	} {
		s := base()
		change(s)
		if Leasable(s) {
			t.Errorf("%s: leasable", name)
		}
	}
}

// Packing a spec of a known kind with a small argument makes one
// allocation, of 64 bytes: its own fields live in the Spec; larger own
// fields make two more (their bytes and the slice that holds them).
func TestPackAllocations(t *testing.T) {
	if n := unsafe.Sizeof(Spec{}); n > 64 {
		t.Fatalf("Spec is %d bytes, want at most 64 (a size class)", n)
	}
	r := rand.New(rand.NewPCG(11, 12))
	var shapes Shapes
	spec := randomSpec(r, 1)
	spec.Trace, spec.SequenceNumber, spec.NumDependencies, spec.ArgProducers, spec.Borrowed = nil, 0, 0, nil, nil
	spec.Args = spec.Args[:0]
	spec.Args = append(spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{
		Codec: atollpb.Codec_CODEC_GOB, Kind: &atollpb.Value_Inline{Inline: []byte{3, 4, 0, 2}}}}})
	shapes.Pack(spec)
	if allocs := testing.AllocsPerRun(100, func() { shapes.Pack(spec) }); allocs != 1 {
		t.Fatalf("%v allocations packing a task with a small argument, want 1", allocs)
	}
	spec.Args[0].GetValue().Kind = &atollpb.Value_Inline{Inline: make([]byte, 100)}
	if allocs := testing.AllocsPerRun(100, func() { shapes.Pack(spec) }); allocs != 3 {
		t.Fatalf("%v allocations packing a task with a 100-byte argument, want 3", allocs)
	}
}

// A recycled spec comes back empty with room for an id and its
// arguments kept; the messages it held are not touched, and a long
// argument list is not kept.
func TestRecycle(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	spec := randomSpec(r, 1)
	spec.TaskId = make([]byte, 16)
	spec.Args = spec.Args[:0]
	arg := &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte{7}}}}}
	spec.Args = append(spec.Args, arg, arg)
	want := proto.CloneOf(arg)
	args, id := spec.Args, spec.TaskId
	Recycle(spec)
	if !proto.Equal(spec, &atollpb.TaskSpec{}) {
		t.Fatalf("recycled spec not empty: %v", spec)
	}
	if len(spec.Args) != 0 || cap(spec.Args) != cap(args) || len(spec.TaskId) != 0 || cap(spec.TaskId) != 16 {
		t.Fatalf("recycled spec keeps args %d/%d (want 0/%d), id %d/%d (want 0/16)",
			len(spec.Args), cap(spec.Args), cap(args), len(spec.TaskId), cap(spec.TaskId))
	}
	if args[0] != nil || args[1] != nil || &id[0] != &spec.TaskId[:1][0] {
		t.Fatal("recycled args not cleared, or the id's room not kept")
	}
	if !proto.Equal(arg, want) {
		t.Fatalf("an argument message was changed: %v, want %v", arg, want)
	}
	long := &atollpb.TaskSpec{Args: make([]*atollpb.TaskArg, maxRecycledArgs+1), TaskId: make([]byte, 20)}
	Recycle(long)
	if long.Args != nil || long.TaskId != nil {
		t.Fatalf("a long argument list or an odd id kept: %d args, %d id bytes", cap(long.Args), cap(long.TaskId))
	}
	if got := NewSpec(); !proto.Equal(got, &atollpb.TaskSpec{}) {
		t.Fatalf("NewSpec returned a spec with fields set: %v", got)
	}
}

// A Held spec reads the same whole or packed.
func TestHeldReadsEitherForm(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var shapes Shapes
	for range 200 {
		spec := randomSpec(r, 3)
		whole, packed := Held{Whole: spec}, Held{Packed: shapes.Pack(spec)}
		if whole.Common().Name != packed.Common().Name || whole.Common().Function != packed.Common().Function ||
			whole.ID() != packed.ID() || whole.Attempt() != packed.Attempt() || !proto.Equal(whole.Trace(), packed.Trace()) ||
			!proto.Equal(whole.Spec(), packed.Spec()) {
			t.Fatalf("whole and packed read apart: %v / %v", whole.Spec(), packed.Spec())
		}
	}
}
