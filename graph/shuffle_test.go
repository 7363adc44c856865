package graph_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/atoll-runtime/atoll/graph"
)

func TestShuffleEqualsNaive(t *testing.T) {
	ctx := start(t)
	const p = 4
	base := graph.Graph{}
	var inputs []graph.Key
	for i := range p {
		k := graph.TupleKey("in", i)
		base[k] = graph.Call("t.range", graph.Lit(i*100), graph.Lit(100+i)) // uneven partitions
		inputs = append(inputs, k)
	}
	results := map[string][]any{}
	for _, c := range []struct {
		name    string
		shuffle func(graph.Graph, []graph.Key, string, string, int, string) (graph.Graph, []graph.Key, error)
		tasks   int
	}{
		// inputs fuse into their map tasks: P map + P reduce.
		{"multi-return", graph.Shuffle, 2 * p},
		// P split (with the inputs fused in) + P² pieces + P combine.
		{"naive", graph.NaiveShuffle, p*p + 2*p},
	} {
		g, outs, err := c.shuffle(base, inputs, "t.split", "t.concat", p, "out")
		if err != nil {
			t.Fatal(err)
		}
		var st graph.Stats
		vals, err := graph.Compute(ctx, g, outs, graph.WithStats(func(s graph.Stats) { st = s }))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if st.Submitted != c.tasks {
			t.Errorf("%s: %d tasks submitted, want %d (%+v)", c.name, st.Submitted, c.tasks, st)
		}
		results[c.name] = vals
	}
	if !reflect.DeepEqual(results["multi-return"], results["naive"]) {
		t.Fatalf("shuffles differ:\n%v\n%v", results["multi-return"], results["naive"])
	}
	// Output j holds every input value v with v % p == j, sorted.
	for j, v := range results["naive"] {
		var want []int64
		for i := range p {
			for x := i * 100; x < i*100+100+i; x++ {
				if x%p == j {
					want = append(want, int64(x))
				}
			}
		}
		if fmt.Sprint(v) != fmt.Sprint(want) {
			t.Fatalf("output %d = %v, want %v", j, v, want)
		}
	}
	// A MultiReturn key computed whole is its outputs gathered.
	g, _, err := graph.Shuffle(base, inputs, "t.split", "t.concat", p, "out")
	if err != nil {
		t.Fatal(err)
	}
	v, err := graph.ComputeOne[[][]int64](ctx, g, graph.TupleKey("out-split", 0))
	if err != nil || len(v) != p || len(v[1]) != 25 {
		t.Fatalf("whole MultiReturn key = %v, %v", v, err)
	}
}

// TestTreeReduction10k runs a pairwise tree reduction of 5,000 leaves:
// 9,999 tasks (-short: 999), none fused.
func TestTreeReduction10k(t *testing.T) {
	ctx := start(t)
	leaves := 5000
	if testing.Short() {
		leaves = 500
	}
	g, root := treeGraph(leaves)
	var st graph.Stats
	v, err := graph.ComputeOne[int](ctx, g, root, graph.WithStats(func(s graph.Stats) { st = s }))
	if err != nil {
		t.Fatal(err)
	}
	if want := leaves * (leaves + 1) / 2; v != want {
		t.Fatalf("sum = %d, want %d", v, want)
	}
	if st.Submitted != 2*leaves-1 {
		t.Fatalf("%d tasks submitted, want %d", st.Submitted, 2*leaves-1)
	}
}

// treeGraph returns a graph summing inc(i) for i < leaves pairwise, and
// its root key.
func treeGraph(leaves int) (graph.Graph, graph.Key) {
	g := graph.Graph{}
	level := make([]graph.Key, leaves)
	for i := range level {
		level[i] = graph.TupleKey("leaf", i)
		g[level[i]] = graph.Call("t.inc", graph.Lit(i))
	}
	for depth := 0; len(level) > 1; depth++ {
		var next []graph.Key
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			k := graph.TupleKey(fmt.Sprintf("sum-%d", depth), i/2)
			g[k] = graph.Call("t.add", graph.Ref(level[i]), graph.Ref(level[i+1]))
			next = append(next, k)
		}
		level = next
	}
	return g, level[0]
}
