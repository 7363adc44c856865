// Command graphbench measures package graph against its same-run
// baselines:
//
//   - tree: a pairwise tree reduction of -leaves leaves (2·leaves-1 tasks)
//     computed as a graph, against the same tree of tasks submitted
//     directly with atoll.NewFunc1/NewFunc2 refs: the per-task overhead of
//     the graph layer (planning, the task spec, reflect calls).
//
//   - shuffle: -partitions partitions of -rows int64 values repartitioned
//     by value modulo P, with graph.Shuffle (P map tasks of P returns, P
//     reduce tasks) against graph.NaiveShuffle (P² more tasks), on the
//     same data; both results are checked equal and complete.
//
//     go run ./graph/internal/graphbench -json
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"runtime"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

var (
	// The baseline's tasks, submitted directly.
	directInc = atoll.NewFunc1("graphbench.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
	directAdd = atoll.NewFunc2("graphbench.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })

	// The same work as graph functions.
	_ = graph.Register("graphbench.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
	_ = graph.Register("graphbench.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
	_ = graph.Register("graphbench.gen", func(_ context.Context, seed, n int) ([]int64, error) {
		out := make([]int64, n)
		x := uint64(seed)*0x9e3779b97f4a7c15 + 1
		for i := range out {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			out[i] = int64(x >> 1)
		}
		return out, nil
	})
	_ = graph.Register("graphbench.split", func(_ context.Context, part []int64, p int) ([][]int64, error) {
		out := make([][]int64, p)
		for _, v := range part {
			out[v%int64(p)] = append(out[v%int64(p)], v)
		}
		for i := range out {
			if out[i] == nil {
				out[i] = []int64{}
			}
		}
		return out, nil
	})
	_ = graph.Register("graphbench.concat", func(_ context.Context, pieces ...[]int64) ([]int64, error) {
		out := []int64{}
		for _, p := range pieces {
			out = append(out, p...)
		}
		return out, nil
	})
)

type options struct {
	leaves     int
	partitions int
	rows       int
	workers    int
	mode       string
	repeat     int
	json       bool
}

func main() {
	opts := options{leaves: 5000, partitions: 16, rows: 100_000, workers: runtime.NumCPU()}
	flag.IntVar(&opts.leaves, "leaves", opts.leaves, "leaves of the tree reduction (tasks: 2·leaves-1)")
	flag.IntVar(&opts.partitions, "partitions", opts.partitions, "partitions of the shuffle, in and out")
	flag.IntVar(&opts.rows, "rows", opts.rows, "int64 values per input partition")
	flag.IntVar(&opts.workers, "workers", opts.workers, "worker slots (CPUs) of the node")
	flag.StringVar(&opts.mode, "mode", "process", "worker mode: process or inprocess")
	flag.IntVar(&opts.repeat, "repeat", 3, "runs of each form, interleaved; medians are reported")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per measurement (progress goes to stderr)")
	flag.Parse()
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	if opts.leaves < 2 || opts.partitions < 1 || opts.rows < 1 || opts.workers < 1 || opts.repeat < 1 {
		return fmt.Errorf("graphbench: -leaves must be at least 2, the others positive")
	}
	mode, err := atoll.ParseWorkerMode(opts.mode)
	if err != nil {
		return err
	}
	// Init first: in a worker process it serves tasks and never returns.
	if err := atoll.Init(ctx, atoll.WithWorkerMode(mode), atoll.WithNumCPUs(float64(opts.workers)),
		atoll.WithObjectStoreMemory(1<<30)); err != nil {
		return err
	}
	defer atoll.Shutdown(ctx)
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "graphbench: "+format+"\n", args...) }

	// Warm the worker pool up so neither form pays for starting it.
	if _, err := directTree(ctx, 64); err != nil {
		return err
	}
	tasks := 2*opts.leaves - 1
	var direct, viaGraph []time.Duration
	for i := range opts.repeat {
		progress("tree %d/%d: %d tasks submitted directly", i+1, opts.repeat, tasks)
		d, err := directTree(ctx, opts.leaves)
		if err != nil {
			return err
		}
		progress("tree %d/%d: %d tasks as a graph", i+1, opts.repeat, tasks)
		g, err := graphTree(ctx, opts.leaves)
		if err != nil {
			return err
		}
		direct, viaGraph = append(direct, d), append(viaGraph, g)
	}

	var naive, multi []time.Duration
	var naiveTasks, multiTasks int
	for i := range opts.repeat {
		progress("shuffle %d/%d: naive, %d partitions of %d rows", i+1, opts.repeat, opts.partitions, opts.rows)
		n, nt, nres, err := shuffle(ctx, opts, graph.NaiveShuffle)
		if err != nil {
			return err
		}
		progress("shuffle %d/%d: multiple returns", i+1, opts.repeat)
		m, mt, mres, err := shuffle(ctx, opts, graph.Shuffle)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(nres, mres) {
			return fmt.Errorf("graphbench: the two shuffles differ")
		}
		naive, multi, naiveTasks, multiTasks = append(naive, n), append(multi, m), nt, mt
	}

	config := map[string]any{
		"leaves": opts.leaves, "tasks": tasks, "workers": opts.workers, "worker_mode": mode.String(),
		"object_store_bytes": 1 << 30, "atoll_version": benchfmt.Version(), "go": runtime.Version(),
		"cpus": runtime.NumCPU(), "repeat": opts.repeat, "statistic": "median",
	}
	shufConfig := map[string]any{
		"partitions": opts.partitions, "rows_per_partition": opts.rows, "workers": opts.workers,
		"worker_mode": mode.String(), "object_store_bytes": 1 << 30, "atoll_version": benchfmt.Version(),
		"go": runtime.Version(), "cpus": runtime.NumCPU(), "repeat": opts.repeat, "statistic": "median",
	}
	d, g := median(direct), median(viaGraph)
	perTask := func(x time.Duration) float64 { return float64(x.Microseconds()) / float64(tasks) }
	n, m := median(naive), median(multi)
	records := []benchfmt.Record{
		benchfmt.NewRecord("graph_tree", "wall_s", g.Seconds(), "s", "atoll_direct_wall_s", d.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("graph_tree", "per_task_us", perTask(g), "us", "atoll_direct_per_task_us", perTask(d), config),
		benchfmt.NewRecord("graph_tree", "tasks_per_s", float64(tasks)/g.Seconds(), "tasks/s", "atoll_direct_tasks_per_s", float64(tasks)/d.Seconds(), config),
		benchfmt.NewRecord("graph_shuffle", "wall_s", m.Seconds(), "s", "naive_shuffle_wall_s", n.Seconds(), shufConfig).WithVerified(true),
		benchfmt.NewRecord("graph_shuffle", "tasks", float64(multiTasks), "tasks", "naive_shuffle_tasks", float64(naiveTasks), shufConfig),
	}
	if opts.json {
		return benchfmt.WriteAll(stdout, records)
	}
	fmt.Fprintf(stdout, "tree reduction, %d tasks on %d %s workers, median of %d\n", tasks, opts.workers, mode, opts.repeat)
	fmt.Fprintf(stdout, "  graph  %.3fs (%.1f µs/task)\n  direct %.3fs (%.1f µs/task)   graph/direct %.2fx\n",
		g.Seconds(), perTask(g), d.Seconds(), perTask(d), g.Seconds()/d.Seconds())
	fmt.Fprintf(stdout, "shuffle, %d partitions of %d int64 rows\n", opts.partitions, opts.rows)
	fmt.Fprintf(stdout, "  multiple returns %.3fs in %d tasks\n  naive            %.3fs in %d tasks   multi/naive %.2fx\n",
		m.Seconds(), multiTasks, n.Seconds(), naiveTasks, m.Seconds()/n.Seconds())
	return nil
}

// directTree submits the tree with atoll refs, as a Go program would by
// hand, and checks the sum.
func directTree(ctx context.Context, leaves int) (time.Duration, error) {
	t0 := time.Now()
	level := make([]atoll.ObjectRef[int], leaves)
	for i := range level {
		level[i] = directInc.Remote(ctx, atoll.Value(i))
	}
	for len(level) > 1 {
		var next []atoll.ObjectRef[int]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			next = append(next, directAdd.Remote(ctx, level[i], level[i+1]))
		}
		level = next
	}
	v, err := atoll.Get(ctx, level[0])
	wall := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if want := leaves * (leaves + 1) / 2; v != want {
		return 0, fmt.Errorf("graphbench: direct tree sum %d, want %d", v, want)
	}
	return wall, nil
}

// graphTree computes the same tree as a graph (building the graph is
// not timed; planning and submitting it is).
func graphTree(ctx context.Context, leaves int) (time.Duration, error) {
	g := graph.Graph{}
	level := make([]graph.Key, leaves)
	for i := range level {
		level[i] = graph.TupleKey("leaf", i)
		g[level[i]] = graph.Call("graphbench.inc", graph.Lit(i))
	}
	for depth := 0; len(level) > 1; depth++ {
		var next []graph.Key
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			k := graph.TupleKey(fmt.Sprintf("sum-%d", depth), i/2)
			g[k] = graph.Call("graphbench.add", graph.Ref(level[i]), graph.Ref(level[i+1]))
			next = append(next, k)
		}
		level = next
	}
	t0 := time.Now()
	v, err := graph.ComputeOne[int](ctx, g, level[0])
	wall := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if want := leaves * (leaves + 1) / 2; v != want {
		return 0, fmt.Errorf("graphbench: graph tree sum %d, want %d", v, want)
	}
	return wall, nil
}

type shuffleFunc func(graph.Graph, []graph.Key, string, string, int, string) (graph.Graph, []graph.Key, error)

// shuffle generates the partitions, shuffles them with sh and checks
// that every output holds only its residue class and that nothing was
// lost. The wall includes generating the inputs (the same tasks in both
// forms).
func shuffle(ctx context.Context, opts options, sh shuffleFunc) (time.Duration, int, []any, error) {
	p := opts.partitions
	g := graph.Graph{}
	inputs := make([]graph.Key, p)
	for i := range inputs {
		inputs[i] = graph.TupleKey("input", i)
		g[inputs[i]] = graph.Call("graphbench.gen", graph.Lit(i), graph.Lit(opts.rows))
	}
	g, outs, err := sh(g, inputs, "graphbench.split", "graphbench.concat", p, "shuffled")
	if err != nil {
		return 0, 0, nil, err
	}
	var st graph.Stats
	t0 := time.Now()
	vals, err := graph.Compute(ctx, g, outs, graph.WithStats(func(s graph.Stats) { st = s }))
	wall := time.Since(t0)
	if err != nil {
		return 0, 0, nil, err
	}
	total := 0
	for j, v := range vals {
		part := v.([]int64)
		total += len(part)
		for _, x := range part {
			if x%int64(p) != int64(j) {
				return 0, 0, nil, fmt.Errorf("graphbench: %d in output %d", x, j)
			}
		}
	}
	if total != p*opts.rows {
		return 0, 0, nil, fmt.Errorf("graphbench: %d values out of %d", total, p*opts.rows)
	}
	return wall, st.Submitted, vals, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
