package workerconn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// randomSpec is a spec with every field but the two shape messages set
// at random (some zero).
func randomSpec(r *rand.Rand, shape int) *atollpb.TaskSpec {
	str := func(n int) string { return strings.Repeat("s", r.IntN(n)) }
	id := func() []byte {
		if r.IntN(5) == 0 {
			return nil
		}
		b := make([]byte, 16)
		b[0] = byte(r.Uint32())
		return b
	}
	// The shape's fields follow from shape alone: specs of a shape share them.
	sr := rand.New(rand.NewPCG(uint64(shape), 9))
	sstr := func(n int) string { return strings.Repeat("f", sr.IntN(n)) }
	s := &atollpb.TaskSpec{
		JobId: []byte{1, 2, 3, byte(shape)}, Type: atollpb.TaskType(sr.IntN(3)), Function: sstr(30), Name: sstr(30),
		NumReturns: sr.Int32N(3), Resources: map[string]float64{"CPU": float64(sr.IntN(3))}, MaxRetries: sr.Int32N(4) - 1,
		RetryExceptions: sr.IntN(2) == 0, OwnerId: []byte("owner-0123456789"), OwnerAddress: sstr(20),
		ActorId: []byte{byte(shape)}, WorkerBinary: sstr(10), WorkerBinarySha256: []byte{9, 9}, ConcurrencyGroup: sstr(5),
		CallerId: []byte{7, byte(shape)}, Generator: sr.IntN(2) == 0, GeneratorBackpressure: sr.Int32N(9),
	}
	if sr.IntN(2) == 0 {
		s.Resources["memory"] = 1 << 20
	}
	if sr.IntN(3) == 0 {
		s.RetryErrors = []string{sstr(20) + "e", "io"}
	}
	s.TaskId, s.Attempt, s.SequenceNumber, s.NumDependencies = id(), r.Int32N(3), r.Uint64N(1<<40), r.Int32N(4)
	for range r.IntN(3) {
		s.Args = append(s.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte(str(40))}}}})
	}
	if r.IntN(3) == 0 {
		s.Trace = &atollpb.TraceContext{Traceparent: str(50)}
		s.ArgProducers = []*atollpb.TraceContext{{Traceparent: str(50)}}
	}
	if r.IntN(4) == 0 {
		s.Borrowed = []*atollpb.ReturnObject{{ObjectId: id()}}
	}
	return s
}

// pushBytes is a push frame's bytes as the raylet's push encoder writes
// them: the shape's fields marshalled alone, then the task's own.
func pushBytes(t testing.TB, s *atollpb.TaskSpec) []byte {
	shape, own := proto.Clone(s).(*atollpb.TaskSpec), proto.Clone(s).(*atollpb.TaskSpec)
	shape.TaskId, shape.Args, shape.Attempt, shape.Trace, shape.SequenceNumber = nil, nil, 0, nil, 0
	shape.ArgProducers, shape.NumDependencies, shape.Borrowed = nil, 0, nil
	*own = atollpb.TaskSpec{TaskId: s.TaskId, Args: s.Args, Attempt: s.Attempt, Trace: s.Trace, SequenceNumber: s.SequenceNumber,
		ArgProducers: s.ArgProducers, NumDependencies: s.NumDependencies, Borrowed: s.Borrowed}
	a, err := proto.MarshalOptions{Deterministic: true}.Marshal(shape)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(own)
	if err != nil {
		t.Fatal(err)
	}
	spec := append(a, b...)
	push := protowire.AppendBytes(protowire.AppendTag(nil, pushTaskSpec, protowire.BytesType), spec)
	return protowire.AppendBytes(protowire.AppendTag(nil, framePushTask, protowire.BytesType), push)
}

// TestPushDecoderMatchesProto: push frames of a few shapes, in turns,
// decode as proto.Unmarshal decodes them; the shape is decoded once per
// change of shape; a frame marshalled whole, with a scheduling strategy
// or with unknown fields is left to proto.Unmarshal.
func TestPushDecoderMatchesProto(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var d pushDecoder
	var lastShape *atollpb.TaskSpec
	changes := 0
	for i := range 3000 {
		shape := r.IntN(3)
		if i%10 != 0 {
			shape = i / 10 % 3 // runs of one shape
		}
		want := &atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: randomSpec(r, shape)}}}
		b := pushBytes(t, want.GetPushTask().GetSpec())
		got, ok := d.decode(b)
		if !ok {
			t.Fatalf("frame %d: a shape-then-own push was left to proto.Unmarshal", i)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("frame %d: decoded %v\nwant %v", i, got, want)
		}
		if d.shape != lastShape {
			changes++
			lastShape = d.shape
		}
	}
	if changes > 700 {
		t.Fatalf("the shape was decoded %d times in 3000 frames of runs of one shape", changes)
	}
	whole := &atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: randomSpec(r, 1)}}}
	b, _ := proto.Marshal(whole) // field 1 (the task's id) first
	if whole.GetPushTask().GetSpec().TaskId != nil {
		if _, ok := d.decode(b); ok {
			t.Fatal("a spec marshalled whole was taken")
		}
	}
	sched := randomSpec(r, 2)
	sched.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_SPREAD}
	if _, ok := d.decode(pushBytes(t, sched)); ok {
		t.Fatal("a shape holding a scheduling strategy was taken")
	}
	unknown := protowire.AppendVarint(protowire.AppendTag(pushBytes(t, randomSpec(r, 0)), 99, protowire.VarintType), 1)
	if _, ok := d.decode(unknown); ok {
		t.Fatal("a frame with an unknown field was taken")
	}
}

// FuzzPushDecoder: on any bytes, pushDecoder either declines or gives
// what proto.Unmarshal gives, whatever shape it kept from the frame
// before.
func FuzzPushDecoder(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 10 {
		f.Add(pushBytes(f, randomSpec(r, i%2)), pushBytes(f, randomSpec(r, i%3)))
	}
	f.Fuzz(func(t *testing.T, first, b []byte) {
		var d pushDecoder
		d.decode(first)
		got, ok := d.decode(b)
		if !ok {
			return
		}
		want := &atollpb.Frame{}
		if err := proto.Unmarshal(b, want); err != nil {
			t.Fatalf("took bytes proto.Unmarshal rejects (%v): %v", err, got)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("decoded %v, want %v", got, want)
		}
	})
}

// TestPushDecoderScalars: a task's own fields written by hand, as no
// marshaller writes them but proto.Unmarshal takes them (a field twice, a
// negative number, an id longer or shorter than a task's, none, a number
// of the wrong wire type), decode as proto.Unmarshal decodes them; a
// decoded id is the push's own, not the reader's buffer.
func TestPushDecoderScalars(t *testing.T) {
	shape := pushBytes(t, &atollpb.TaskSpec{Function: "f", Name: "f", NumReturns: 1, OwnerId: []byte("owner")})
	frame := func(own []byte) []byte {
		// the shape's spec bytes, then own
		var spec []byte
		_, _, n := protowire.ConsumeTag(shape)
		push, _ := protowire.ConsumeBytes(shape[n:])
		_, _, n = protowire.ConsumeTag(push)
		spec, _ = protowire.ConsumeBytes(push[n:])
		spec = append(append([]byte(nil), spec...), own...)
		p := protowire.AppendBytes(protowire.AppendTag(nil, pushTaskSpec, protowire.BytesType), spec)
		return protowire.AppendBytes(protowire.AppendTag(nil, framePushTask, protowire.BytesType), p)
	}
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	id := func(b []byte, n int) []byte {
		return protowire.AppendBytes(tag(b, specTaskID, protowire.BytesType), []byte(strings.Repeat("i", n)))
	}
	num := func(b []byte, f protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(b, f, protowire.VarintType), v)
	}
	neg := uint64(1<<64 - 1) // -1 as an int32's varint
	for name, own := range map[string][]byte{
		"id and numbers":       num(num(num(id(nil, 16), specAttempt, 2), specSequenceNumber, 1<<40), specNumDependencies, 3),
		"id twice":             id(id(nil, 16), 16),
		"a short id":           id(nil, 3),
		"a long id":            id(nil, 40),
		"an empty id":          id(nil, 0),
		"no id":                num(nil, specAttempt, 1),
		"negative":             num(num(id(nil, 16), specAttempt, neg), specNumDependencies, neg),
		"a wide attempt":       num(id(nil, 16), specAttempt, 1<<40),
		"nothing":              nil,
		"numbers out of order": num(num(id(num(nil, specSequenceNumber, 9), 16), specAttempt, 1), specSequenceNumber, 10),
	} {
		t.Run(name, func(t *testing.T) {
			var d pushDecoder
			b := frame(own)
			got, ok := d.decode(b)
			if !ok {
				t.Fatal("left to proto.Unmarshal")
			}
			want := &atollpb.Frame{}
			if err := proto.Unmarshal(b, want); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("decoded %v\nwant %v", got, want)
			}
			clear(b) // the reader's buffer, read over by the next frame
			if !proto.Equal(got, want) {
				t.Fatalf("the decoded push changed with the reader's buffer: %v", got)
			}
		})
	}
	// A number of the wrong wire type is an unknown field to
	// proto.Unmarshal: not taken.
	var d pushDecoder
	if _, ok := d.decode(frame(protowire.AppendBytes(tag(id(nil, 16), specAttempt, protowire.BytesType), []byte{1}))); ok {
		t.Fatal("an attempt of the bytes wire type was taken")
	}
}

// BenchmarkPushDecoder decodes the push frame of a no-argument task of
// a shape already decoded, as a worker's reader does for each task of a
// pipelined burst, against proto.Unmarshal of the same frame.
func BenchmarkPushDecoder(b *testing.B) {
	s := &atollpb.TaskSpec{JobId: []byte{1, 2, 3, 4}, Type: atollpb.TaskType_NORMAL_TASK, Function: "bench.noop", Name: "bench.noop",
		NumReturns: 1, Resources: map[string]float64{"CPU": 1}, MaxRetries: 3, OwnerId: []byte("owner-0123456789"),
		OwnerAddress: "0123456789abcdef0123456789abcdef", TaskId: make([]byte, 16)}
	frame := pushBytes(b, s)
	b.Run("decoder", func(b *testing.B) {
		var d pushDecoder
		if _, ok := d.decode(frame); !ok {
			b.Fatal("not decoded")
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := d.decode(frame); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("proto_unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := proto.Unmarshal(frame, &atollpb.Frame{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
