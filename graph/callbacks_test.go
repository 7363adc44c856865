package graph_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
)

// recorder is a task callback that appends what it sees, with the pid of
// the process it runs in, to the file events in the directory its param
// names.
type recorder struct{}

func (recorder) PreTask(_ context.Context, t graph.TaskInfo) any {
	appendEvent(t.Param, fmt.Sprintf("pre %s %d", t.Key, os.Getpid()))
	return "state-" + string(t.Key)
}

func (recorder) PostTask(_ context.Context, t graph.TaskInfo, result any, state any) {
	appendEvent(t.Param, fmt.Sprintf("post %s %d %v %v", t.Key, os.Getpid(), result, state))
}

func init() { graph.RegisterTaskCallback("t.recorder", recorder{}) }

func appendEvent(dir, line string) {
	f, err := os.OpenFile(filepath.Join(dir, "events"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		panic(err)
	}
}

// driverRecorder records the driver-side hooks.
type driverRecorder struct {
	mu     sync.Mutex
	events []string
}

func (d *driverRecorder) add(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, s)
}

func (d *driverRecorder) PreSubmit(k graph.Key, s graph.Submission) (any, bool) {
	d.add(fmt.Sprintf("presubmit %s %v", k, s.Type))
	return nil, false
}
func (d *driverRecorder) PostSubmit(k graph.Key, ref atoll.Ref) {
	if ref == nil || ref.ID() == "" {
		panic("PostSubmit without a ref")
	}
	d.add("postsubmit " + string(k))
}
func (d *driverRecorder) PostSubmitAll(refs map[graph.Key]atoll.Ref) {
	d.add(fmt.Sprintf("postsubmitall %d", len(refs)))
}
func (d *driverRecorder) Finish(err error) { d.add(fmt.Sprintf("finish %v", err)) }

func TestCallbacks(t *testing.T) {
	ctx := start(t)
	dir := t.TempDir()
	g := graph.Graph{
		"a": graph.Call("t.inc", graph.Lit(1)),
		"b": graph.Call("t.inc", graph.Ref("a")),
		"c": graph.Call("t.add", graph.Ref("a"), graph.Ref("b")),
	}
	d := &driverRecorder{}
	vals, err := graph.Compute(ctx, g, []graph.Key{"c"}, graph.WithCallbacks(d),
		graph.WithTaskCallback("t.recorder", dir), graph.WithFusion(false))
	if err != nil || vals[0] != 5 {
		t.Fatalf("c = %v, %v", vals, err)
	}
	// Driver hooks: every PreSubmit, each consumer before its
	// dependencies (b reads a, so b comes before a although c reaches a
	// first), then the tasks submitted in topological order, then
	// PostSubmitAll, then Finish.
	want := []string{"presubmit c int", "presubmit b int", "presubmit a int",
		"postsubmit a", "postsubmit b", "postsubmit c", "postsubmitall 3", "finish <nil>"}
	if !slices.Equal(d.events, want) {
		t.Fatalf("driver hooks:\n%s\nwant\n%s", strings.Join(d.events, "\n"), strings.Join(want, "\n"))
	}
	// Task hooks: in worker processes, PreTask before PostTask for each
	// task, PostTask with the result and PreTask's state, a dependency's
	// hooks before its consumer's.
	b, err := os.ReadFile(filepath.Join(dir, "events"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	pos := map[string]int{}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("event %q", l)
		}
		pid, _ := strconv.Atoi(f[2])
		if pid == os.Getpid() || pid == 0 {
			t.Fatalf("event %q ran in the driver (pid %d), want a worker process", l, os.Getpid())
		}
		pos[f[0]+" "+f[1]] = i
		if f[0] == "post" {
			res := map[string]string{"a": "2", "b": "3", "c": "5"}[f[1]]
			if len(f) != 5 || f[3] != res || f[4] != "state-"+f[1] {
				t.Fatalf("event %q: want result %s and state state-%s", l, res, f[1])
			}
		}
	}
	if len(lines) != 6 {
		t.Fatalf("task hooks: %v, want pre and post of a, b, c", lines)
	}
	for _, order := range [][2]string{{"pre a", "post a"}, {"pre b", "post b"}, {"pre c", "post c"}, {"post a", "pre b"}, {"post b", "pre c"}} {
		if pos[order[0]] >= pos[order[1]] {
			t.Fatalf("task hooks %v: %s is not before %s", lines, order[0], order[1])
		}
	}
	// Only the tasks of chosen keys get a task callback.
	dir2 := t.TempDir()
	if _, err := graph.Compute(ctx, g, []graph.Key{"c"}, graph.WithTaskCallback("t.recorder", dir2, "b"), graph.WithFusion(false)); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(dir2, "events"))
	if err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), "pre b ") {
		t.Fatalf("events for key b only: %q, %v", b, err)
	}
	// An unregistered task callback is refused up front.
	if _, err := graph.Compute(ctx, g, []graph.Key{"c"}, graph.WithTaskCallback("t.nope", "")); err == nil {
		t.Fatal("Compute with an unregistered task callback succeeded")
	}
}

func TestProgressBar(t *testing.T) {
	ctx := start(t)
	g := graph.Graph{}
	var parts []graph.Expr
	for i := range 20 {
		k := graph.TupleKey("x", i)
		g[k] = graph.Call("t.inc", graph.Lit(i))
		parts = append(parts, graph.Ref(k))
	}
	g["total"] = graph.Call("t.sum", parts...)
	var out bytes.Buffer
	bar := graph.NewProgressBar(&out)
	v, err := graph.ComputeOne[int](ctx, g, "total", graph.WithCallbacks(bar))
	if err != nil || v != 210 {
		t.Fatalf("total = %v, %v", v, err)
	}
	s := out.String()
	last := s[strings.LastIndex(s, "\r")+1:]
	if !strings.HasPrefix(last, "[########################################] | 100% Completed | 21/21 tasks | ") || !strings.HasSuffix(last, "s\n") {
		t.Fatalf("last line %q", last)
	}
}

func TestResultCache(t *testing.T) {
	ctx := start(t)
	dir, cache := t.TempDir(), t.TempDir()
	g := chain(dir, 3)
	var st graph.Stats
	stats := graph.WithStats(func(s graph.Stats) { st = s })
	for run := range 2 {
		v, err := graph.ComputeOne[int](ctx, g, "c2", graph.WithResultCache(cache, "c2"), stats)
		if err != nil || v != 3 {
			t.Fatalf("run %d: c2 = %v, %v", run, v, err)
		}
		if n := len(counted(t, dir)); n != 3 {
			t.Fatalf("run %d: %d executions, want 3 (the second run reads the cache)", run, n)
		}
		if run == 1 && (st.FromCallbacks != 1 || st.Submitted != 0) {
			t.Fatalf("second run: %+v, want the result from the cache and nothing submitted", st)
		}
	}
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache dir: %v, %v; want one entry", entries, err)
	}
	// The hash does not depend on fusion: unfused, c2 still comes from
	// the cache and c0, c1 are not needed.
	if v, err := graph.ComputeOne[int](ctx, g, "c2", graph.WithResultCache(cache, "c2"), graph.WithFusion(false), stats); err != nil || v != 3 || st.Submitted != 0 {
		t.Fatalf("unfused: %v, %v, %+v", v, err, st)
	}
	// A task on top of the cached key runs alone.
	g["d"] = graph.Call("t.tick", graph.Lit(dir), graph.Ref("c2"))
	if v, err := graph.ComputeOne[int](ctx, g, "d", graph.WithResultCache(cache, "c2"), graph.WithFusion(false), stats); err != nil || v != 4 || st.Submitted != 1 {
		t.Fatalf("d: %v, %v, %+v", v, err, st)
	}
	if n := len(counted(t, dir)); n != 4 {
		t.Fatalf("%d executions, want 4", n)
	}
	// A different input is a different task.
	g["c0"] = graph.Call("t.tick", graph.Lit(dir), graph.Lit(10))
	if v, err := graph.ComputeOne[int](ctx, g, "c2", graph.WithResultCache(cache, "c2")); err != nil || v != 13 {
		t.Fatalf("c2 of 10 = %v, %v", v, err)
	}
	if n := len(counted(t, dir)); n != 7 {
		t.Fatalf("%d executions, want 7", n)
	}
}
