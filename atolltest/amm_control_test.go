package atolltest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// A small distributed sort for the drain test: sortMap makes chunk i of
// the input (sortChunkLen values from a fixed generator) and splits it into
// sortParts ranges; sortReduce sorts one range from every chunk.
const (
	sortChunks   = 12
	sortParts    = 4
	sortChunkLen = 1 << 18 // 2 MiB of int64 per chunk
)

// sortValue is value j of chunk i (a fixed permutation-like generator).
func sortValue(i, j int) int64 {
	x := uint64(i)*0x9E3779B97F4A7C15 + uint64(j)*0xBF58476D1CE4E5B9
	x ^= x >> 31
	x *= 0x94D049BB133111EB
	x ^= x >> 29
	return int64(x >> 1)
}

type sortedPart struct {
	Values []int64
	Node   string
}

var (
	sortMap = atoll.NewMultiFunc1("cl.sortMap", func(_ context.Context, i int) ([][]int64, error) {
		parts := make([][]int64, sortParts)
		for j := range sortChunkLen {
			v := sortValue(i, j)
			p := int(uint64(v) / (uint64(1<<63) / sortParts))
			parts[min(p, sortParts-1)] = append(parts[min(p, sortParts-1)], v)
		}
		return parts, nil
	})
	sortReduce = atoll.NewFuncN("cl.sortReduce", func(_ context.Context, parts [][]int64) (sortedPart, error) {
		var out []int64
		for _, p := range parts {
			out = append(out, p...)
		}
		slices.Sort(out)
		return sortedPart{out, atoll.CurrentNodeID()}, nil
	})
	// holdUntil runs until the file release exists in dir, having said it
	// started with the file started.
	holdUntil = atoll.NewFunc1("cl.holdUntil", func(ctx context.Context, dir string) (string, error) {
		if err := os.WriteFile(filepath.Join(dir, "started"), nil, 0o600); err != nil {
			return "", err
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
				return atoll.CurrentNodeID(), nil
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-tick.C:
			}
		}
	})
)

// TestDrainNodeMidSort drains a worker node in the middle of a sort on a
// three-node cluster whose AMM policies are off (a drain runs without
// them): the node holds map outputs (the only copies) and runs a task when
// the drain starts. The drain waits for that task, which succeeds; no new
// task lands on the node; its objects are copied to the other nodes; then
// the node leaves, its process exits with status 0 and the cluster lists it
// dead. Every task runs with no retries, so a task the drain failed would
// fail the test. The sort's result is verified (every value once, in
// order), and every map output, the drained node's included, still reads
// right.
func TestDrainNodeMidSort(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 2 * time.Second},
		Env: []string{cluster.EnvAMMInterval + "=200ms"}})
	ctx := testmain.JoinCluster(t, c)
	drained := c.Node(2)

	// The map stage, spread over the nodes.
	maps := make([][]atoll.ObjectRef[[]int64], sortChunks)
	for i := range maps {
		maps[i] = sortMap.Remote(ctx, sortParts, atoll.Value(i), atoll.Spread(), atoll.MaxRetries(0))
	}
	for i := range maps {
		for _, r := range maps[i] {
			if _, _, err := atoll.Wait(ctx, []atoll.Ref{r}, atoll.FetchLocal(false)); err != nil {
				t.Fatalf("map %d: %v", i, err)
			}
		}
	}
	if x, ok := nodeStatus(ctx, c, drained.ID); !ok || x.StoreUsed == 0 {
		t.Fatalf("node %s holds no map output before the drain (%+v)", drained.ID, x)
	}

	// A task running on the node when the drain starts.
	dir := t.TempDir()
	held := holdUntil.Remote(ctx, atoll.Value(dir), atoll.OnNode(drained.ID, false), atoll.MaxRetries(0))
	testutil.Eventually(t, "the held task to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})

	var states []string
	var mu sync.Mutex
	drainErr := make(chan error, 1)
	go func() {
		drainErr <- atolltest.DrainNode(ctx, drained.ID[:8], func(d atolltest.DrainStatus) {
			mu.Lock()
			if len(states) == 0 || states[len(states)-1] != d.State {
				states = append(states, d.State)
			}
			mu.Unlock()
		})
	}()
	testutil.Eventually(t, "the drain to wait for the held task", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(states, "waiting for its tasks")
	})

	// The reduce stage while the node drains: none of it runs there.
	reduces := make([]atoll.ObjectRef[sortedPart], sortParts)
	for p := range reduces {
		args := make([]atoll.Arg[[]int64], sortChunks)
		for i := range args {
			args[i] = maps[i][p]
		}
		// No retries: a task failed by the drain would fail the sort.
		reduces[p] = sortReduce.Remote(ctx, args, atoll.MaxRetries(0))
	}
	parts, err := atoll.GetAll(ctx, reduces)
	if err != nil {
		t.Fatalf("reduce stage during the drain: %v", err)
	}
	if !drained.Alive() {
		t.Fatal("the node left while its task was running")
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if where, err := atoll.Get(ctx, held); err != nil || where != drained.ID {
		t.Fatalf("the task running when the drain started: %q, %v", where, err)
	}
	select {
	case err := <-drainErr:
		if err != nil {
			t.Fatalf("DrainNode: %v (states %v)", err, states)
		}
	case <-ctx.Done():
		t.Fatalf("the drain did not end (states %v)", states)
	}
	t.Logf("drain states: %v", states)
	select {
	case <-drained.Done():
		if code := drained.ExitCode(); code != 0 {
			t.Fatalf("the drained node's process: %v", drained.ExitErr())
		}
	case <-time.After(testcluster.StopTimeout):
		t.Fatal("the drained node's process did not exit")
	}
	st, err := clusterclient.GetStatus(ctx, c.Address(), c.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.NodeID == drained.ID && (n.Alive || !n.Left || n.EndReason != "drained" || n.EndTime.IsZero()) {
			t.Fatalf("atoll status lists the drained node as %+v, want it left, \"drained\", with its end time", n)
		}
	}

	// Verify the sort: every partition in order, ranges in order, every
	// value of the input once (count and sum).
	var count int
	var sum, want uint64
	var last int64 = -1
	for p, part := range parts {
		if part.Node == drained.ID {
			t.Errorf("reduce %d ran on the draining node", p)
		}
		for _, v := range part.Values {
			if v < last {
				t.Fatalf("partition %d out of order", p)
			}
			last = v
			sum += uint64(v)
		}
		count += len(part.Values)
	}
	for i := range sortChunks {
		for j := range sortChunkLen {
			want += uint64(sortValue(i, j))
		}
	}
	if count != sortChunks*sortChunkLen || sum != want {
		t.Fatalf("sorted %d values (sum %d), want %d (sum %d)", count, sum, sortChunks*sortChunkLen, want)
	}

	// No object lost: every map output reads, from its copies.
	for i := range maps {
		for p, r := range maps[i] {
			v, err := atoll.Get(ctx, r)
			if err != nil {
				t.Fatalf("map output %d/%d after the drain: %v", i, p, err)
			}
			for _, x := range v {
				if int(uint64(x)/(uint64(1<<63)/sortParts)) != p && p != sortParts-1 {
					t.Fatalf("map output %d/%d holds %d", i, p, x)
				}
			}
		}
	}

	// The head and unknown nodes cannot be drained.
	if err := atolltest.DrainNode(ctx, c.Node(0).ID, nil); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Errorf("DrainNode(head): %v, want ErrInvalidArgument", err)
	}
	if err := atolltest.DrainNode(ctx, drained.ID, nil); !errors.Is(err, atoll.ErrNotFound) {
		t.Errorf("DrainNode(drained node again): %v, want ErrNotFound", err)
	}
}

// TestAMMStartStop: on a cluster whose head started with the AMM off, a
// driver reads its status (stopped, no round run), starts it (the copies a
// SPREAD read left go away; the primary stays), and stops it again.
func TestAMMStartStop(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 2 * time.Second},
		Env: []string{cluster.EnvAMMInterval + "=200ms"}})
	ctx := testmain.JoinCluster(t, c)
	const n = 3 << 20
	obj, err := atoll.Put(ctx, testutil.Pattern(n))
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]atoll.ObjectRef[sumOn], 2*c.Len())
	for i := range refs {
		refs[i] = sumBytes.Remote(ctx, obj, atoll.Spread())
	}
	got, err := atoll.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if g.Sum != testutil.ByteSum(testutil.Pattern(n)) {
			t.Fatalf("read on node %s: sum %d", g.Node, g.Sum)
		}
	}
	copies := func() int {
		k := 0
		for i := range c.Len() {
			x, ok := nodeStatus(ctx, c, c.Node(i).ID)
			if !ok {
				t.Fatalf("no status of node %s", c.Node(i).ID)
			}
			if x.StoreUsed >= n {
				k++
			}
		}
		return k
	}
	// (A node's load report may predate its pull by a report interval.)
	// (A node's load report may predate its pull by a report interval.)
	testutil.Eventually(t, "every node to report its copy", func() bool { return copies() == c.Len() })
	st, err := atolltest.GetAMMStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled || st.Rounds != 0 || st.Interval != 200*time.Millisecond {
		t.Fatalf("status of an AMM the head started off: %+v", st)
	}
	if st, err = atolltest.StartAMM(ctx); err != nil || !st.Enabled {
		t.Fatalf("StartAMM: %+v, %v", st, err)
	}
	testutil.Eventually(t, "the started AMM to drop the copies", func() bool { return copies() == 0 })
	if x, ok := nodeStatus(ctx, c, atoll.CurrentNodeID()); !ok || x.StoreUsed < n {
		t.Fatalf("the primary on the driver's node was dropped: %+v %v", x, ok)
	}
	if st, err = atolltest.StopAMM(ctx); err != nil || st.Enabled || st.Dropped < uint64(c.Len()) {
		t.Fatalf("StopAMM: %+v, %v (want stopped, at least %d copies dropped)", st, err, c.Len())
	}
	// obj lives to here (a collected ref frees its object, copies and all).
	if b, err := atoll.Get(ctx, obj); err != nil || testutil.ByteSum(b) != testutil.ByteSum(testutil.Pattern(n)) {
		t.Fatalf("driver Get at the end: %v", err)
	}
}
