package atolltest_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestAMMRebalance: with the Active Memory Manager's policies set to
// Replicate,Rebalance through the head's environment (ATOLL_AMM_POLICIES),
// copies of seven 4 MiB objects pulled onto one node (their primaries on
// the driver's node, which takes no part) are moved to the other two until
// the hot node is back near the mean: Rebalance stops where a move would
// push a recipient past the mean, so with 28 MiB over three 64 MiB
// stores (mean 9.3 MiB) the hot node keeps three copies and the others
// take two each. The spread of store use among the worker nodes falls
// from 28 MiB to 4 MiB, the copies move rather than vanish (the worker
// nodes' total stays), and the following rounds move nothing (no copy goes
// back and forth). Every object then reads right on a node that received
// moved copies, and from the driver.
func TestAMMRebalance(t *testing.T) {
	const (
		k         = 7
		size      = 4 << 20
		storeSize = 64 << 20
	)
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, ObjectStoreMemory: storeSize, FailureTimeout: 2 * time.Second},
		Env: []string{cluster.EnvAMM + "=1", cluster.EnvAMMInterval + "=200ms",
			cluster.EnvAMMPolicies + "=Replicate,Rebalance"}})
	ctx := testmain.JoinCluster(t, c)
	workers := make([]string, c.Len())
	for i := range workers {
		workers[i] = c.Node(i).ID
	}
	hot := workers[2]
	rounds := countAMMRounds(t, c, hot)

	// uses reads the worker nodes' store use and pulls from the cluster's
	// status (the nodes' last load reports).
	uses := func() []storeUse {
		out := make([]storeUse, len(workers))
		for i, id := range workers {
			x, ok := nodeStatus(ctx, c, id)
			if !ok {
				t.Fatalf("no status of node %s", id)
			}
			if x.StoreCap != storeSize {
				t.Fatalf("node %s: store capacity %d, want %d", id, x.StoreCap, uint64(storeSize))
			}
			out[i] = storeUse{x.StoreUsed, x.Pulls}
		}
		return out
	}
	spread := func(u []storeUse) (spread, total uint64) {
		lo, hi := u[0].used, u[0].used
		for _, x := range u {
			lo, hi, total = min(lo, x.used), max(hi, x.used), total+x.used
		}
		return hi - lo, total
	}

	// Seven objects on the driver's node, and a copy of each pulled onto
	// the hot node by a task pinned there.
	objs := make([]atoll.ObjectRef[[]byte], k)
	want := make([]uint64, k)
	for i := range objs {
		b := testutil.Pattern(size)
		b[0] = byte(i) // distinct objects
		want[i] = testutil.ByteSum(b)
		var err error
		if objs[i], err = atoll.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	start := uses()
	dir := t.TempDir()
	args := []atoll.Arg[[]byte]{atoll.Value([]byte(dir))}
	for _, obj := range objs {
		args = append(args, obj)
	}
	held := holdAll.Remote(ctx, args, atoll.OnNode(hot, false))
	testutil.Eventually(t, "the holding task to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})

	// Before: the hot node holds all seven copies (the others nothing),
	// pinned by the holding task, so the rounds leave them where they are.
	var before []storeUse
	testutil.Eventually(t, "the hot node to report its seven copies", func() bool {
		before = uses()
		return before[2].used >= start[2].used+k*size && before[2].pulls >= start[2].pulls+k
	})
	spreadBefore, totalBefore := spread(before)
	perCopy := (before[2].used - start[2].used) / k // a copy's store use (size and a header)
	t.Logf("before: store use of the workers (MiB) %s, spread %.1f MiB (%.3f of a store), a copy %d bytes",
		inMiB(before), float64(spreadBefore)/(1<<20), float64(spreadBefore)/storeSize, perCopy)
	if spreadBefore < k*size {
		t.Fatalf("spread before %d, want at least %d", spreadBefore, k*size)
	}
	seen := rounds.Load()
	testutil.Eventually(t, "three AMM rounds while the copies are pinned", func() bool { return rounds.Load() >= seen+3 })
	if now := uses(); !slices.Equal(now, before) {
		t.Fatalf("store use and pulls changed while the copies were pinned: %s (%v), was %s (%v)",
			inMiB(now), now, inMiB(before), before)
	}

	// Released, the copies may move (once their read grace has passed).
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := atoll.Get(ctx, held)
	if err != nil {
		t.Fatalf("holding task: %v", err)
	}
	for i, g := range got {
		if g.Sum != want[i] || g.Node != hot {
			t.Fatalf("read of object %d on the hot node: %+v, want sum %d on %s", i, g, want[i], hot)
		}
	}

	// After: four copies moved off the hot node, two to each other node.
	var after []storeUse
	testutil.Eventually(t, "Rebalance to move four copies off the hot node", func() bool {
		after = uses()
		// A node reports a pull's store use when it starts and counts it
		// when it ends: wait for both.
		return after[2].used <= before[2].used-4*perCopy &&
			after[0].used >= before[0].used+2*perCopy && after[1].used >= before[1].used+2*perCopy &&
			after[0].pulls >= before[0].pulls+2 && after[1].pulls >= before[1].pulls+2
	})
	spreadAfter, totalAfter := spread(after)
	t.Logf("after: store use of the workers (MiB) %s, spread %.1f MiB (%.3f of a store); pulls %d %d %d (before %d %d %d)",
		inMiB(after), float64(spreadAfter)/(1<<20), float64(spreadAfter)/storeSize,
		after[0].pulls, after[1].pulls, after[2].pulls, before[0].pulls, before[1].pulls, before[2].pulls)
	if spreadAfter > spreadBefore/2 {
		t.Fatalf("spread after %d, want at most half of %d", spreadAfter, spreadBefore)
	}
	if totalAfter != totalBefore {
		t.Fatalf("the workers' store use went from %d to %d: copies were dropped, not moved", totalBefore, totalAfter)
	}
	if after[2].used != before[2].used-4*perCopy || after[0].used != before[0].used+2*perCopy || after[1].used != before[1].used+2*perCopy ||
		after[2].pulls != before[2].pulls || after[0].pulls != before[0].pulls+2 || after[1].pulls != before[1].pulls+2 {
		t.Fatalf("store use %s (%v), want the hot node down by 4 copies and the others up by 2, pulled once each (before %s, %v)",
			inMiB(after), after, inMiB(before), before)
	}

	// The next rounds move nothing: the hot node is within the threshold
	// of the mean, and no moved copy moves again.
	seen = rounds.Load()
	testutil.Eventually(t, "five more AMM rounds", func() bool { return rounds.Load() >= seen+5 })
	if now := uses(); !slices.Equal(now, after) {
		t.Fatalf("store use and pulls changed in the rounds after the move: %s (pulls %v), was %s (pulls %v)",
			inMiB(now), now, inMiB(after), after)
	}

	// Every object reads right on a node that received moved copies (it
	// pulls the ones it lacks), and from the driver: nothing was lost.
	for _, recipient := range workers[:2] {
		reads := make([]atoll.ObjectRef[sumOn], k)
		for i, obj := range objs {
			reads[i] = sumBytes.Remote(ctx, obj, atoll.OnNode(recipient, false))
		}
		got, err := atoll.GetAll(ctx, reads)
		if err != nil {
			t.Fatalf("reads on node %s: %v", recipient, err)
		}
		for i, g := range got {
			if g.Sum != want[i] || g.Node != recipient {
				t.Fatalf("read of object %d on node %s: %+v, want sum %d", i, recipient, g, want[i])
			}
		}
	}
	for i, obj := range objs {
		b, err := atoll.Get(ctx, obj)
		if err != nil || testutil.ByteSum(b) != want[i] {
			t.Fatalf("driver Get of object %d at the end: %v", i, err)
		}
	}
}

// holdAll reads its arguments but the first, a directory, and holds them
// (pinned views) until the file release exists there; it marks its start
// with the file started. It returns each argument's sum.
var holdAll = atoll.NewFuncN("cl.holdAll", func(ctx context.Context, args [][]byte) ([]sumOn, error) {
	dir := string(args[0])
	if err := os.WriteFile(filepath.Join(dir, "started"), nil, 0o600); err != nil {
		return nil, err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	out := make([]sumOn, len(args)-1)
	for i, b := range args[1:] {
		out[i] = sumOn{testutil.ByteSum(b), atoll.CurrentNodeID()}
	}
	return out, nil
})

// countAMMRounds counts the head's AMM rounds: each asks node (hex id) for
// its inventory once.
func countAMMRounds(t *testing.T, c *testcluster.Cluster, nodeID string) *atomic.Int64 {
	t.Helper()
	nc := c.DialAs(cluster.HeadUser) // only the head may read another node's subjects
	b, err := hex.DecodeString(nodeID)
	if err != nil {
		t.Fatal(err)
	}
	id, err := ids.FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	if _, err := nc.Subscribe(cluster.ObjectsSubject(id), func(*nats.Msg) { n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// storeUse is a node's store use and pulls, from its load report.
type storeUse struct{ used, pulls uint64 }

// inMiB formats store uses in MiB.
func inMiB(u []storeUse) string {
	s := make([]string, len(u))
	for i, x := range u {
		s[i] = strconv.FormatFloat(float64(x.used)/(1<<20), 'f', 1, 64)
	}
	return strings.Join(s, " ")
}
