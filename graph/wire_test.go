package graph

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// specNode plans a small graph and returns the node of key w: a call of
// plan.add on a fused call and a dependency, with a literal inside.
func specNode(t testing.TB) *node {
	g := Graph{"x": Lit(1), "y": Call("plan.inc", Ref("x")), "z": Call("plan.add", Ref("y"), Lit(10)), "w": Call("plan.add", Ref("z"), Ref("y"))}
	p, err := makePlan(g, []Key{"w"}, false, true)
	if err != nil {
		t.Fatal(err)
	}
	return p.nodes["w"]
}

func specOf(n *node) *atollpb.GraphTask {
	return &atollpb.GraphTask{Key: string(n.key), Hash: n.hash, NumReturns: uint32(n.nret), Deps: n.wdeps, Expr: n.wexpr,
		Callbacks: []*atollpb.GraphCallback{{Name: "cb", Param: "p"}}}
}

func TestTaskSpecRoundTrip(t *testing.T) {
	n := specNode(t)
	b, err := encodeTask(specOf(n))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTask(b, len(n.deps), false)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, specOf(n)) {
		t.Fatalf("decoded %v\nwant %v", got, specOf(n))
	}
}

// Every inconsistency a worker would trip over fails the decode with a
// MalformedError, before anything runs.
func TestMalformedTaskSpecs(t *testing.T) {
	n := specNode(t)
	deps := len(n.deps)
	cases := map[string]struct {
		mutate func(*atollpb.GraphTask)
		deps   int
		multi  bool
	}{
		"fewer dependencies passed": {func(*atollpb.GraphTask) {}, deps - 1, false},
		"multi without returns":     {func(*atollpb.GraphTask) {}, deps, true},
		"returns without multi":     {func(s *atollpb.GraphTask) { s.NumReturns = 2 }, deps, false},
		"no expression":             {func(s *atollpb.GraphTask) { s.Expr = nil }, deps, false},
		"slot out of range": {func(s *atollpb.GraphTask) {
			s.Expr.Args[1] = &atollpb.GraphExpr{Kind: atollpb.GraphExpr_DEP, Index: uint32(deps)}
		}, deps, false},
		"unknown kind":    {func(s *atollpb.GraphTask) { s.Expr.Args[0].Kind = 42 }, deps, false},
		"unnamed call":    {func(s *atollpb.GraphTask) { s.Expr.Func = "" }, deps, false},
		"item of nothing": {func(s *atollpb.GraphTask) { s.Expr.Args[0] = &atollpb.GraphExpr{Kind: atollpb.GraphExpr_ITEM} }, deps, false},
		"literal codec": {func(s *atollpb.GraphTask) {
			s.Expr.Args[1] = &atollpb.GraphExpr{Kind: atollpb.GraphExpr_LITERAL, Codec: 99}
		}, deps, false},
		"error literal": {func(s *atollpb.GraphTask) {
			s.Expr.Args[1] = &atollpb.GraphExpr{Kind: atollpb.GraphExpr_LITERAL, Codec: atollpb.Codec_CODEC_ERROR}
		}, deps, false},
		"unnamed callback": {func(s *atollpb.GraphTask) { s.Callbacks[0].Name = "" }, deps, false},
		"depth without fn": {func(s *atollpb.GraphTask) { s.Deps[0] = &atollpb.GraphDep{Depth: 1} }, deps, false},
		"spread of nothing": {func(s *atollpb.GraphTask) {
			s.Expr.Args[0] = &atollpb.GraphExpr{Kind: atollpb.GraphExpr_CALL, Func: "f", Spread: true}
		}, deps, false},
	}
	for name, c := range cases {
		s := proto.Clone(specOf(n)).(*atollpb.GraphTask)
		c.mutate(s)
		b, err := proto.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeTask(b, c.deps, c.multi)
		var me *errs.MalformedError
		if !errors.As(err, &me) || me.What != specWhat || !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("%s: %v, want a MalformedError", name, err)
		}
	}
	// Bytes that are not a GraphTask at all.
	if _, err := decodeTask([]byte{0xff, 0xff, 0xff}, 0, false); !errors.Is(err, errs.ErrMalformed) {
		t.Errorf("garbage: %v, want ErrMalformed", err)
	}
	// Nesting past the bound fails too, without exhausting the stack.
	deep := &atollpb.GraphExpr{Kind: atollpb.GraphExpr_LITERAL, Codec: atollpb.Codec_CODEC_GOB}
	for range maxExprDepth + 10 {
		deep = &atollpb.GraphExpr{Kind: atollpb.GraphExpr_LIST, Args: []*atollpb.GraphExpr{deep}}
	}
	b, err := proto.Marshal(&atollpb.GraphTask{Key: "deep", Expr: deep})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeTask(b, 0, false); !errors.Is(err, errs.ErrMalformed) {
		t.Errorf("nested %d deep: %v, want ErrMalformed", maxExprDepth+10, err)
	}
}

// FuzzDecodeTask: no bytes make the decoder panic, and what it accepts
// passes the checks the evaluator relies on.
func FuzzDecodeTask(f *testing.F) {
	n := specNode(f)
	b, err := encodeTask(specOf(n))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, uint8(len(n.deps)), false)
	f.Add(b[:len(b)/2], uint8(len(n.deps)), false)
	f.Add([]byte{}, uint8(0), true)
	f.Fuzz(func(t *testing.T, b []byte, deps uint8, multi bool) {
		s, err := decodeTask(b, int(deps), multi)
		if err != nil {
			if !errors.Is(err, errs.ErrMalformed) {
				t.Fatalf("a decode error that is not ErrMalformed: %v", err)
			}
			return
		}
		if len(s.Deps) != int(deps) || s.Expr == nil {
			t.Fatalf("accepted %v for %d dependencies", s, deps)
		}
		var walk func(e *atollpb.GraphExpr)
		walk = func(e *atollpb.GraphExpr) {
			if e.Kind == atollpb.GraphExpr_DEP && int(e.Index) >= int(deps) || e.Kind == atollpb.GraphExpr_ITEM && len(e.Args) != 1 {
				t.Fatalf("accepted a bad expression %v", e)
			}
			for _, a := range e.Args {
				walk(a)
			}
		}
		walk(s.Expr)
	})
}

// BenchmarkTaskSpec measures a task spec's encoding in the driver and
// its decoding (with the checks) in the worker.
func BenchmarkTaskSpec(b *testing.B) {
	n := specNode(b)
	buf, err := encodeTask(specOf(n))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeTask(specOf(n)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeTask(buf, len(n.deps), false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
