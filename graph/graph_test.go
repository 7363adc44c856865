package graph_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
)

type point struct{ X, Y int }

// Functions the tests' graphs call, registered at init so the worker
// processes (this test binary, re-executed) know them.
var (
	_ = graph.Register("t.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
	_ = graph.Register("t.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
	_ = graph.Register("t.sum", func(_ context.Context, xs ...int) (int, error) {
		s := 0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	_ = graph.Register("t.sumSlice", func(_ context.Context, xs []int) (int, error) {
		s := 0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	// t.tick counts its executions in dir (see countLine).
	_ = graph.Register("t.tick", func(_ context.Context, dir string, x int) (int, error) {
		return x + 1, countLine(dir, "tick")
	})
	_ = graph.Register("t.fail", func(_ context.Context, x int) (int, error) {
		return 0, fmt.Errorf("boom at %d", x)
	})
	_ = graph.Register("t.scale", func(_ context.Context, xs []float64, a float64) ([]float64, error) {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = a * x
		}
		return out, nil
	})
	_ = graph.Register("t.total", func(_ context.Context, xs []float64) (float64, error) {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	// t.identity returns its argument, a view of shared memory: the
	// executor must copy it before the view is released.
	_ = graph.Register("t.identity", func(_ context.Context, xs []float64) ([]float64, error) { return xs, nil })
	_ = graph.Register("t.point", func(_ context.Context, x int) (point, error) { return point{x, x + 1}, nil })
	_ = graph.Register("t.norm1", func(_ context.Context, p point) (int, error) { return p.X + p.Y, nil })
	_ = graph.Register("t.describe", func(_ context.Context, v any) (string, error) { return fmt.Sprint(v), nil })
	_ = graph.Register("t.range", func(_ context.Context, lo, n int) ([]int64, error) {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(lo + i)
		}
		return out, nil
	})
	// t.split cuts a partition into p pieces by value modulo p.
	_ = graph.Register("t.split", func(_ context.Context, part []int64, p int) ([][]int64, error) {
		out := make([][]int64, p)
		for i := range out {
			out[i] = []int64{}
		}
		for _, v := range part {
			out[v%int64(p)] = append(out[v%int64(p)], v)
		}
		return out, nil
	})
	_ = graph.Register("t.concat", func(_ context.Context, pieces ...[]int64) ([]int64, error) {
		var out []int64
		for _, p := range pieces {
			out = append(out, p...)
		}
		slices.Sort(out)
		if out == nil {
			out = []int64{}
		}
		return out, nil
	})
	// t.flaky fails when the lines counted in dir are even, else returns
	// their number plus one.
	_ = graph.Register("t.flaky", func(_ context.Context, dir string) (int, error) {
		data, _ := os.ReadFile(filepath.Join(dir, "count"))
		n := strings.Count(string(data), "\n")
		if err := countLine(dir, "flaky"); err != nil {
			return 0, err
		}
		if n%2 == 0 {
			return 0, fmt.Errorf("flaky call %d", n+1)
		}
		return n + 1, nil
	})
	// t.shared reports whether xs lies in a memfd mapping of this process
	// (the object store's arena): a zero-copy view, not a copy.
	_ = graph.Register("t.shared", func(_ context.Context, xs []float64) (bool, error) {
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil || len(xs) == 0 {
			return false, err
		}
		addr := uint64(uintptr(unsafe.Pointer(&xs[0])))
		for _, line := range strings.Split(string(maps), "\n") {
			var lo, hi uint64
			if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil && lo <= addr && addr < hi {
				return strings.Contains(line, "memfd:"), nil
			}
		}
		return false, nil
	})
)

func TestTupleKey(t *testing.T) {
	for _, c := range []struct {
		got  graph.Key
		want string
	}{
		{graph.TupleKey("x", 3, 1), "('x', 3, 1)"},
		{graph.TupleKey("x", 3), "('x', 3)"},
		{graph.TupleKey("x"), "('x',)"},
	} {
		if string(c.got) != c.want {
			t.Errorf("TupleKey = %s, want %s", c.got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := graph.Graph{
		"x":   graph.Lit(1),
		"y":   graph.Call("t.inc", graph.Ref("x")),
		"z":   graph.Call("t.add", graph.Ref("y"), graph.Lit(10)),
		"w":   graph.Ref("z"),
		"l":   graph.List(graph.Ref("y"), graph.Ref("w"), graph.Lit(5)),
		"s":   graph.Call("t.sum", graph.Ref("l")),
		"s0":  graph.Call("t.sum"),
		"s3":  graph.Call("t.sum", graph.Lit(1), graph.Ref("y"), graph.Call("t.inc", graph.Lit(2))),
		"ss":  graph.Call("t.sumSlice", graph.List(graph.Lit(1), graph.Ref("z"))),
		"d":   graph.Call("t.describe", graph.Ref("p")),
		"df":  graph.Call("t.describe", graph.Lit([]float64{1})),
		"p":   graph.Call("t.point", graph.Lit(3)),
		"r":   graph.Call("t.range", graph.Lit(0), graph.Lit(4)),
		"r2":  graph.Item(graph.Ref("r"), 2),
		"m":   graph.MultiReturn(graph.Call("t.split", graph.Ref("r"), graph.Lit(2)), 2),
		"m1":  graph.Call("t.concat", graph.Item(graph.Ref("m"), 1)),
		"nst": graph.Call("t.add", graph.Call("t.inc", graph.Lit(1)), graph.Lit(3)),
	}
	if err := graph.Validate(ok); err != nil {
		t.Fatalf("Validate(valid graph): %v", err)
	}

	cases := []struct {
		name  string
		g     graph.Graph
		check func(t *testing.T, err error)
	}{
		{"cycle", graph.Graph{
			"top": graph.Call("t.inc", graph.Ref("a")),
			"a":   graph.Call("t.inc", graph.Ref("b")),
			"b":   graph.Call("t.inc", graph.Ref("c")),
			"c":   graph.Call("t.inc", graph.Ref("a")),
		}, func(t *testing.T, err error) {
			var ce *graph.CycleError
			if !errors.As(err, &ce) || !slices.Equal(ce.Keys, []graph.Key{"a", "b", "c"}) {
				t.Fatalf("err = %v, want a cycle a -> b -> c", err)
			}
		}},
		{"missing", graph.Graph{"top": graph.Call("t.inc", graph.Ref("nope"))}, func(t *testing.T, err error) {
			var me *graph.MissingKeyError
			if !errors.As(err, &me) || me.Key != "nope" || me.From != "top" {
				t.Fatalf("err = %v, want MissingKeyError{nope, top}", err)
			}
		}},
		{"unregistered", graph.Graph{"top": graph.Call("t.nope", graph.Lit(1))}, func(t *testing.T, err error) {
			var ue *graph.UnregisteredFuncError
			if !errors.As(err, &ue) || ue.Func != "t.nope" || ue.Key != "top" {
				t.Fatalf("err = %v, want UnregisteredFuncError", err)
			}
		}},
		{"literal type", graph.Graph{"top": graph.Call("t.inc", graph.Lit("one"))},
			argType("top", "t.inc", 0, reflect.TypeFor[int](), reflect.TypeFor[string]())},
		{"producer's type", graph.Graph{
			"r":   graph.Call("t.range", graph.Lit(0), graph.Lit(4)),
			"top": graph.Call("t.add", graph.Lit(1), graph.Ref("r")),
		}, argType("top", "t.add", 1, reflect.TypeFor[int](), reflect.TypeFor[[]int64]())},
		{"list for a scalar", graph.Graph{"top": graph.Call("t.inc", graph.List(graph.Lit(1)))},
			argType("top", "t.inc", 0, reflect.TypeFor[int](), nil)},
		{"list item", graph.Graph{"top": graph.Call("t.sumSlice", graph.List(graph.Lit(1), graph.Lit(2.5)))},
			argType("top", "t.sumSlice", 0, reflect.TypeFor[int](), reflect.TypeFor[float64]())},
		{"arity", graph.Graph{"top": graph.Call("t.add", graph.Lit(1))}, argType("top", "t.add", -1, nil, nil)},
		{"variadic arity", graph.Graph{"top": graph.Call("t.tick")}, argType("top", "t.tick", -1, nil, nil)},
		{"variadic tail", graph.Graph{"top": graph.Call("t.sum", graph.Lit(1), graph.Lit("2"))},
			argType("top", "t.sum", 1, reflect.TypeFor[int](), reflect.TypeFor[string]())},
		{"nested task", graph.Graph{"top": graph.Call("t.inc", graph.Call("t.point", graph.Lit(1)))},
			argType("top", "t.inc", 0, reflect.TypeFor[int](), reflect.TypeFor[point]())},
		{"gob literal to an interface", graph.Graph{"top": graph.Call("t.describe", graph.Lit(point{}))},
			argType("top", "t.describe", 0, reflect.TypeFor[any](), reflect.TypeFor[point]())},
		{"whole MultiReturn", graph.Graph{
			"r":   graph.Call("t.range", graph.Lit(0), graph.Lit(4)),
			"m":   graph.MultiReturn(graph.Call("t.split", graph.Ref("r"), graph.Lit(2)), 2),
			"top": graph.Call("t.concat", graph.Ref("m")),
		}, argType("top", "", -1, nil, nil)},
		{"Item out of range", graph.Graph{
			"r":   graph.Call("t.range", graph.Lit(0), graph.Lit(4)),
			"m":   graph.MultiReturn(graph.Call("t.split", graph.Ref("r"), graph.Lit(2)), 2),
			"top": graph.Call("t.concat", graph.Item(graph.Ref("m"), 2)),
		}, argType("top", "", -1, nil, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := graph.Validate(c.g, "top")
			if !errors.Is(err, atoll.ErrInvalidArgument) {
				t.Fatalf("err = %v, want one matching ErrInvalidArgument", err)
			}
			c.check(t, err)
		})
	}
}

func argType(key graph.Key, fn string, index int, want, got reflect.Type) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var ae *graph.ArgTypeError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v, want an ArgTypeError", err)
		}
		if ae.Key != key || ae.Func != fn || ae.Index != index || ae.Want != want || ae.Got != got {
			t.Fatalf("err = %+v (%v), want key %s func %s index %d want %v got %v", *ae, err, key, fn, index, want, got)
		}
	}
}

func TestCompute(t *testing.T) {
	ctx := start(t)
	big := make([]float64, 64<<10) // 512 KiB: put in the store, passed as a ref
	for i := range big {
		big[i] = float64(i % 7)
	}
	bigSum := 0.0
	for _, v := range big {
		bigSum += v
	}
	stored, err := atoll.Put(ctx, point{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	g := graph.Graph{
		"x":      graph.Lit(1),
		"y":      graph.Call("t.inc", graph.Ref("x")),
		"z":      graph.Call("t.add", graph.Ref("y"), graph.Lit(10)),
		"alias":  graph.Ref("z"),
		"list":   graph.List(graph.Ref("y"), graph.Ref("alias"), graph.Lit(5)),
		"spread": graph.Call("t.sum", graph.Ref("list")),
		"slice":  graph.Call("t.sumSlice", graph.Ref("list")),
		"tail":   graph.Call("t.sum", graph.Lit(1), graph.Ref("y"), graph.Call("t.inc", graph.Lit(2))),
		"none":   graph.Call("t.sum"),
		"nested": graph.Call("t.add", graph.Call("t.inc", graph.Lit(1)), graph.Lit(3)),
		"big":    graph.Lit(big),
		"total":  graph.Call("t.total", graph.Ref("big")),
		"scaled": graph.Call("t.scale", graph.Ref("big"), graph.Lit(2.0)),
		"same":   graph.Call("t.identity", graph.Ref("big")),
		"p":      graph.Call("t.point", graph.Lit(3)),
		"norm":   graph.Call("t.norm1", graph.Ref("p")),
		"desc":   graph.Call("t.describe", graph.Ref("p")),
		"obj":    graph.Object(stored, reflect.TypeFor[point]()),
		"objn":   graph.Call("t.norm1", graph.Ref("obj")),
		"r":      graph.Call("t.range", graph.Lit(10), graph.Lit(4)),
		"r2":     graph.Item(graph.Ref("r"), 2),
		"tasks":  graph.List(graph.Call("t.inc", graph.Lit(40)), graph.Lit("s")),
		// The literal key (512 KiB) is put in the store once; the
		// scaled array is a task's result, stored too: both reach t.shared
		// as views of the arena.
		"shared":  graph.Call("t.shared", graph.Ref("big")),
		"scaled3": graph.Call("t.scale", graph.Ref("big"), graph.Lit(3.0)),
		"shared2": graph.Call("t.shared", graph.Ref("scaled3")),
		"total3":  graph.Call("t.total", graph.Ref("scaled3")), // so scaled3 is not fused into shared2
	}
	keys := []graph.Key{"z", "alias", "list", "spread", "slice", "tail", "none", "nested", "total", "p", "norm", "desc",
		"obj", "objn", "r2", "x", "tasks", "shared", "shared2", "total3"}
	vals, err := graph.Compute(ctx, g, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{12, 12, []any{2, 12, 5}, 19, 19, 6, 0, 5, bigSum, point{3, 4}, 7, "{3 4}",
		point{5, 6}, 11, int64(12), 1, []any{41, "s"}, true, true, 3 * bigSum}
	for i, k := range keys {
		if !reflect.DeepEqual(vals[i], want[i]) {
			t.Errorf("%s = %#v, want %#v", k, vals[i], want[i])
		}
	}

	// Values are copies: keep and modify them freely.
	vals, err = graph.Compute(ctx, g, []graph.Key{"scaled", "same"})
	if err != nil {
		t.Fatal(err)
	}
	scaled, same := vals[0].([]float64), vals[1].([]float64)
	for i := range big {
		if scaled[i] != 2*big[i] || same[i] != big[i] {
			t.Fatalf("element %d: scaled %v same %v, want %v and %v", i, scaled[i], same[i], 2*big[i], big[i])
		}
	}
	scaled[0], same[0] = -1, -1

	n, err := graph.ComputeOne[int](ctx, g, "norm")
	if err != nil || n != 7 {
		t.Fatalf("ComputeOne(norm) = %v, %v", n, err)
	}
	if _, err := graph.ComputeOne[string](ctx, g, "norm"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("ComputeOne[string](int key): %v, want ErrInvalidArgument", err)
	}
}

func TestComputeErrors(t *testing.T) {
	ctx := start(t)
	g := graph.Graph{
		"a":     graph.Call("t.inc", graph.Lit(1)),
		"bad":   graph.Call("t.fail", graph.Ref("a")),
		"after": graph.Call("t.add", graph.Ref("bad"), graph.Ref("a")),
	}
	_, err := graph.Compute(ctx, g, []graph.Key{"bad"})
	var te *atoll.TaskError
	if !errors.As(err, &te) || te.TaskName != "bad" || !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("err = %v, want a TaskError of task bad", err)
	}
	// A task whose dependency failed fails with the dependency's error.
	_, err = graph.Compute(ctx, g, []graph.Key{"after"})
	if !errors.As(err, &te) || te.TaskName != "bad" {
		t.Fatalf("err = %v, want the TaskError of bad", err)
	}
	// Call options reach every task: t.flaky fails once, then succeeds,
	// which only a retry of application errors gets past.
	dir := t.TempDir()
	g["flaky"] = graph.Call("t.flaky", graph.Lit(dir))
	if _, err := graph.Compute(ctx, g, []graph.Key{"flaky"}); !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("flaky without retries: %v, want a TaskError", err)
	}
	if err := countLine(dir, "test"); err != nil { // the next call fails again
		t.Fatal(err)
	}
	if v, err := graph.Compute(ctx, g, []graph.Key{"flaky"}, graph.WithCallOptions(atoll.RetryExceptions(), atoll.MaxRetries(1))); err != nil || v[0] != 4 {
		t.Fatalf("flaky with retries: %v, %v", v, err)
	}
	delete(g, "flaky")
	// An invalid graph fails before anything is submitted.
	g["a"] = graph.Call("t.inc", graph.Ref("after"))
	_, err = graph.Compute(ctx, g, []graph.Key{"after"})
	var ce *graph.CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CycleError", err)
	}
}

// chain returns a graph of n t.tick tasks in a row, counting in dir,
// ending at key "c<n-1>", and a task "other" off c0.
func chain(dir string, n int) graph.Graph {
	g := graph.Graph{"c0": graph.Call("t.tick", graph.Lit(dir), graph.Lit(0))}
	for i := 1; i < n; i++ {
		g[graph.Key(fmt.Sprintf("c%d", i))] = graph.Call("t.tick", graph.Lit(dir), graph.Ref(graph.Key(fmt.Sprintf("c%d", i-1))))
	}
	g["other"] = graph.Call("t.tick", graph.Lit(dir), graph.Ref("c0"))
	return g
}

func TestCullAndFusion(t *testing.T) {
	ctx := start(t)
	for _, c := range []struct {
		name   string
		fusion bool
		keys   []graph.Key
		want   graph.Stats
		ticks  int
	}{
		// Culled to c0..c3, a linear chain: one task.
		{"chain", true, []graph.Key{"c3"}, graph.Stats{Keys: 5, TasksBefore: 5, AfterCull: 4, AfterFusion: 1, Submitted: 1}, 4},
		{"not fused", false, []graph.Key{"c3"}, graph.Stats{Keys: 5, TasksBefore: 5, AfterCull: 4, AfterFusion: 4, Submitted: 4}, 4},
		// c0 has two consumers (c1, other): c1..c3 fuse into c3.
		{"branch", true, []graph.Key{"c3", "other"}, graph.Stats{Keys: 5, TasksBefore: 5, AfterCull: 5, AfterFusion: 3, Submitted: 3}, 5},
		// A requested key is never fused away: c0 into c1, c2 into c3.
		{"requested", true, []graph.Key{"c3", "c1"}, graph.Stats{Keys: 5, TasksBefore: 5, AfterCull: 4, AfterFusion: 2, Submitted: 2}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			g := chain(dir, 4)
			var st graph.Stats
			vals, err := graph.Compute(ctx, g, c.keys, graph.WithFusion(c.fusion), graph.WithStats(func(s graph.Stats) { st = s }))
			if err != nil {
				t.Fatal(err)
			}
			if vals[0] != 4 {
				t.Fatalf("c3 = %v, want 4", vals[0])
			}
			if st != c.want {
				t.Fatalf("stats %+v, want %+v", st, c.want)
			}
			if n := len(counted(t, dir)); n != c.ticks {
				t.Fatalf("%d executions, want %d", n, c.ticks)
			}
		})
	}
}

func TestPersist(t *testing.T) {
	ctx := start(t)
	dir := t.TempDir()
	g := chain(dir, 4)
	pg, err := graph.Persist(ctx, g, []graph.Key{"c3"})
	if err != nil {
		t.Fatal(err)
	}
	// c3 is an object now; c1 and c2 were only for it; other still needs c0.
	if _, ok := pg["c1"]; ok {
		t.Errorf("persisted graph still holds c1: %v", pg)
	}
	if _, ok := pg["c2"]; ok {
		t.Errorf("persisted graph still holds c2: %v", pg)
	}
	if _, ok := pg["c0"]; !ok {
		t.Errorf("persisted graph lost c0, which other needs: %v", pg)
	}
	for range 2 {
		v, err := graph.ComputeOne[int](ctx, pg, "c3")
		if err != nil || v != 4 {
			t.Fatalf("c3 = %v, %v", v, err)
		}
		if n := len(counted(t, dir)); n != 4 {
			t.Fatalf("%d executions after computing the persisted key, want 4 (no re-runs)", n)
		}
	}
	// A key built on the persisted one runs only itself.
	pg["c4"] = graph.Call("t.tick", graph.Lit(dir), graph.Ref("c3"))
	var st graph.Stats
	v, err := graph.ComputeOne[int](ctx, pg, "c4", graph.WithStats(func(s graph.Stats) { st = s }))
	if err != nil || v != 5 || st.Submitted != 1 {
		t.Fatalf("c4 = %v, %v with %+v", v, err, st)
	}
	if n := len(counted(t, dir)); n != 5 {
		t.Fatalf("%d executions, want 5", n)
	}
}

func TestBuilder(t *testing.T) {
	ctx := start(t)
	b := graph.NewBuilder()
	x := graph.Const(b, 3)
	y := graph.Apply2(b, add2, x, x)
	z := graph.Apply1(b, half, y)
	pts := graph.Apply1(b, mkPoint, z)
	s := graph.ApplyN(b, sumN, x, y)
	ref, err := atoll.Put(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	o := graph.Apply2(b, add2, graph.FromRef(b, ref), s)
	if err := graph.Validate(b.Graph()); err != nil {
		t.Fatal(err)
	}
	if v, err := z.Compute(ctx); err != nil || v != 3.0 {
		t.Fatalf("z = %v, %v", v, err)
	}
	if v, err := pts.Compute(ctx); err != nil || v != (point{3, 4}) {
		t.Fatalf("pts = %v, %v", v, err)
	}
	if v, err := o.Compute(ctx); err != nil || v != 109 {
		t.Fatalf("o = %v, %v", v, err)
	}
	if y.Key() == x.Key() || y.Key() == "" {
		t.Fatalf("keys %q %q", x.Key(), y.Key())
	}
}

var (
	add2    = graph.Register2("t.add2", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
	half    = graph.Register1("t.half", func(_ context.Context, a int) (float64, error) { return float64(a) / 2, nil })
	mkPoint = graph.Register1("t.mkPoint", func(_ context.Context, a float64) (point, error) { return point{int(a), int(a) + 1}, nil })
	sumN    = graph.RegisterN("t.sumN", func(_ context.Context, xs ...int) (int, error) {
		s := 0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
)
