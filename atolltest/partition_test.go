package atolltest_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// ptRun says where and at which attempt a task ran.
type ptRun struct {
	Node    string
	Attempt int
}

var ptWhere = atoll.NewFunc1("pt.where", func(ctx context.Context, d time.Duration) (ptRun, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ptRun{}, ctx.Err()
	}
	return ptRun{Node: atoll.CurrentNodeID(), Attempt: atoll.CurrentAttempt(ctx)}, nil
})

// TestPartitionHeals cuts a worker node off the cluster (NATS, transfers,
// gossip) for three failure timeouts while it runs tasks: the others
// declare it dead and retry its tasks, every result arrives once and
// none from the cut node; healed, the node learns it is dead and exits,
// and the cluster ends with one view: the GCS, the gossip of every
// survivor and the scheduler agree on the same live nodes, and no
// survivor was declared dead by what the cut node concluded while alone.
func TestPartitionHeals(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3})
	ft := c.Options().Node.FailureTimeout
	ctx := testmain.JoinCluster(t, c, atoll.WithFailureTimeout(ft))
	head, other, victim := c.Node(0), c.Node(1), c.Node(2)
	driver := atoll.CurrentNodeID()

	refs := make([]atoll.ObjectRef[ptRun], 12)
	for i := range refs {
		refs[i] = ptWhere.Remote(ctx, atoll.Value(1500*time.Millisecond), atoll.Spread())
	}
	cut := 3 * ft
	if err := atolltest.PartitionNode(ctx, victim.ID, faultplan.Both, cut); err != nil {
		t.Fatalf("PartitionNode: %v", err)
	}
	cutAt := time.Now()
	runs := make([]ptRun, len(refs))
	for i, ref := range refs {
		var err error
		if runs[i], err = atoll.Get(ctx, ref); err != nil {
			t.Fatalf("task %d across the partition: %v", i, err)
		}
	}
	retried := 0
	for i, r := range runs {
		if r.Node == victim.ID {
			t.Errorf("task %d: a result from the cut node (attempt %d)", i, r.Attempt)
		}
		if r.Attempt > 0 {
			retried++
		}
	}
	if retried == 0 {
		t.Error("no task was retried: none was running on the cut node")
	}
	t.Logf("%d of %d tasks retried after the cut, all done %v after it", retried, len(runs), time.Since(cutAt).Round(time.Millisecond))

	// Healed, the cut node finds itself dead and exits.
	select {
	case <-victim.Done():
	case <-time.After(cut + time.Minute):
		t.Fatalf("the cut node still runs %v after its partition healed", time.Minute)
	}
	if victim.ExitCode() == 0 {
		t.Error("the node declared dead exited with status 0")
	}
	b, _ := os.ReadFile(victim.LogFile)
	for _, want := range []string{"cut off from the cluster", "partition healed", "declared this node dead"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the cut node's log lacks %q", want)
		}
	}

	// One view: the GCS lists exactly the survivors alive and the cut
	// node dead; each survivor's gateway has the others as peers.
	alive := []string{head.ID, other.ID, driver}
	slices.Sort(alive)
	st := c.WaitStatus(30*time.Second, func(st *clusterclient.Status) bool {
		var live []string
		victimDead := false
		for _, n := range st.Nodes {
			if n.Alive {
				live = append(live, n.NodeID)
			} else if n.NodeID == victim.ID {
				victimDead = true
			}
		}
		slices.Sort(live)
		return victimDead && slices.Equal(live, alive)
	})
	if st == nil {
		t.Fatalf("the GCS never listed exactly %v alive and the cut node dead", alive)
	}
	for _, id := range []string{head.ID, other.ID} {
		testutil.Eventually(t, "survivor "+id[:8]+" to have the other survivors as peers", func() bool {
			s := c.StatsOf(id, false)
			return s != nil && s.Peers == uint64(len(alive)-1)
		})
	}
	if got := testmain.SpreadNodes(ctx, t, 12); !slices.Equal(got, []string{min(head.ID, other.ID), max(head.ID, other.ID)}) {
		t.Errorf("after the heal, tasks ran on %v, want the two survivors", got)
	}
}

// The partition call refuses the head and bad arguments with typed errors.
func TestPartitionNodeRefusals(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2})
	ctx := testmain.JoinCluster(t, c)
	for _, tc := range []struct {
		name string
		id   string
		dir  faultplan.Direction
		d    time.Duration
	}{
		{"the head", c.Node(0).ID, faultplan.Both, time.Second},
		{"the driver's node", atoll.CurrentNodeID(), faultplan.Both, time.Second},
		{"a bad direction", c.Node(1).ID, "sideways", time.Second},
		{"no duration", c.Node(1).ID, faultplan.Both, 0},
		{"too long", c.Node(1).ID, faultplan.Both, faultplan.MaxPartition + time.Second},
		{"a bad id", "xyz", faultplan.Both, time.Second},
	} {
		if err := atolltest.PartitionNode(ctx, tc.id, tc.dir, tc.d); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	unknown := strings.Repeat("ab", 16)
	if err := atolltest.PartitionNode(ctx, unknown, faultplan.Both, time.Second); !errors.Is(err, atoll.ErrNotFound) {
		t.Errorf("an unknown node: %v, want ErrNotFound", err)
	}
}
