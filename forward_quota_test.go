package atoll_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// The sizes of TestForwardedWorkIsBounded.
const (
	// fqFlood tasks no node can run are forwarded to the node from one
	// (forged) origin, each with an fqArg-byte inline argument.
	fqFlood = 10000
	fqArg   = 8 << 10
	// The node's quotas: per origin, and for all origins together.
	fqPerOrigin = 1000
	fqTotal     = 1500
	// fqDriverTasks are submitted by a real driver on top, for the node's
	// overall quota to refuse the last ones.
	fqDriverTasks = 520
	// fqHeapGrowth bounds the growth of the node's live heap (after a GC)
	// under the flood. The quota holds fqTotal tasks at most, about 11 KiB
	// each (the spec with its argument, the raylet's and the gateway's
	// entries): ~16 MiB. Holding all fqFlood of them, as a node did before
	// the quota, grows it by ~93 MiB (measured with the quotas lifted:
	// 4.1 -> 96.9 MiB; with them 3.9 -> 13.4 MiB).
	fqHeapGrowth = 40 << 20
)

// TestForwardedWorkIsBounded floods a node with fqFlood forwarded tasks
// that no node can run (a resource nobody has), as a peer on the cluster's
// NATS could, from one origin: the node holds its quota of them and
// refuses the rest back to the origin with RESOURCE_EXHAUSTED, and its
// heap stays bounded. A real driver's tasks on top are refused past the
// node's overall quota with atoll.ResourceExhaustedError; and when the
// flooding origin claims to leave, the node drops what it held for it
// from its raylet too, so leaving makes no room for more.
func TestForwardedWorkIsBounded(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1},
		Config: func(i int, cfg *nodeconfig.Config) {
			if i == 1 {
				cfg.Resources = map[string]float64{"slot": 1}
			}
		},
		// The forged origin is no member of the gossip: its work would be
		// refused a lease after it arrived (TestForwardFromNonMemberRefused
		// in internal/security). Held for the test, it stands for a member
		// flooding the node.
		Env: []string{cluster.EnvMaxForwardedPerOrigin + "=" + strconv.Itoa(fqPerOrigin), cluster.EnvMaxForwarded + "=" + strconv.Itoa(fqTotal),
			cluster.EnvStrangerGrace + "=1h"},
	})
	raw, err := hex.DecodeString(c.Node(1).ID)
	if err != nil {
		t.Fatal(err)
	}
	target, err := ids.FromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The flood comes from a made-up origin node: the connection is that
	// node's, which may send work to others and read its own results.
	origin := ids.NewNodeID()
	nc := c.DialAs(cluster.NodeUser(origin))

	// The forged origin's results: refusals, each a typed error.
	var mu sync.Mutex
	var refused int
	var bad error
	sub, err := nc.Subscribe(cluster.ResultSubject(origin), func(m *nats.Msg) {
		var fr atollpb.ForwardedResult
		err := proto.Unmarshal(m.Data, &fr)
		if err == nil {
			var re *errs.ResourceExhaustedError
			if e := errs.FromProto(fr.GetResult().GetError()); !errors.As(e, &re) || re.NodeID != target.String() {
				err = e
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil && bad == nil {
			bad = err
		}
		refused++
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	before := c.NodeStats(1, true)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	arg := &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: make([]byte, fqArg)}}}}
	start := time.Now()
	// In batches, each taken in before the next, so that neither NATS
	// connection has more than a few MiB pending (past its limits NATS
	// would drop messages or the connection, not hold them).
	for sent := 0; sent < fqFlood; {
		for range 1000 {
			spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), JobId: ids.NewJobID().Bytes(), Function: "fq.none", Name: "fq.infeasible",
				Args: []*atollpb.TaskArg{arg}, NumReturns: 1, Resources: map[string]float64{"CPU": 1, "no-node-has-it": 1},
				OwnerId: ids.NewWorkerID().Bytes(), OwnerAddress: origin.String(), WorkerBinary: exe}
			b, err := proto.Marshal(&atollpb.ForwardTask{Spec: spec, OriginNode: origin.Bytes(), Hops: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.Publish(cluster.TaskSubject(target), b); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		testutil.EventuallyWithin(t, time.Minute, "the node to take in a batch of the flood", func() bool {
			st := c.NodeStats(1, false)
			return int(st.Inbound+st.ForwardsRefused) == sent
		})
	}
	testutil.EventuallyWithin(t, time.Minute, "the refusals to reach the origin", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return refused == fqFlood-fqPerOrigin
	})
	took := time.Since(start)
	after := c.NodeStats(1, true)
	mu.Lock()
	if bad != nil {
		t.Fatalf("a refusal that is not RESOURCE_EXHAUSTED from node %s: %v", target.Short(), bad)
	}
	mu.Unlock()
	growth := int64(after.HeapAllocBytes) - int64(before.HeapAllocBytes)
	t.Logf("%d tasks forwarded in %v: %d held (%d KiB of specs), %d refused; heap %.1f -> %.1f MiB (%+.1f MiB)",
		fqFlood, took.Round(time.Millisecond), after.Inbound, after.InboundBytes>>10, after.ForwardsRefused,
		heapMiB(before.HeapAllocBytes), heapMiB(after.HeapAllocBytes), float64(growth)/(1<<20))
	if after.Inbound != fqPerOrigin || after.ForwardsRefused != fqFlood-fqPerOrigin {
		t.Fatalf("the node holds %d tasks and refused %d; want %d and %d", after.Inbound, after.ForwardsRefused, fqPerOrigin, fqFlood-fqPerOrigin)
	}
	if growth > fqHeapGrowth {
		t.Errorf("the node's heap grew by %.1f MiB under the flood, over the %d MiB bound", float64(growth)/(1<<20), fqHeapGrowth>>20)
	}

	// A real driver's tasks, which only the flooded node can run: it takes
	// them up to its overall quota and refuses the others.
	ctx := testmain.JoinCluster(t, c)
	refs := make([]atoll.Ref, fqDriverTasks)
	typed := make([]atoll.ObjectRef[string], fqDriverTasks)
	for i := range refs {
		typed[i] = holdFor.Remote(ctx, atoll.Value(time.Hour), atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"slot": 1}}))
		refs[i] = typed[i]
	}
	over := fqDriverTasks - (fqTotal - fqPerOrigin)
	waitCtx, stop := context.WithTimeout(ctx, time.Minute)
	ready, _, err := atoll.Wait(waitCtx, refs, atoll.NumReady(over), atoll.FetchLocal(false))
	stop()
	if err != nil || len(ready) != over {
		t.Fatalf("%d of the driver's tasks ended, %v; want the %d past the quota", len(ready), err, over)
	}
	for i, r := range typed {
		if !isReady(ready, r) {
			continue
		}
		_, err := atoll.Get(ctx, r)
		var re *atoll.ResourceExhaustedError
		if !errors.As(err, &re) || !errors.Is(err, atoll.ErrResourceExhausted) || re.NodeID != target.String() {
			t.Fatalf("task %d: %v, want a ResourceExhaustedError from node %s", i, err, target.Short())
		}
		if i == len(typed)-1 || t.Failed() {
			t.Logf("task %d: %v", i, err)
		}
	}
	if st := c.NodeStats(1, false); st.Inbound != fqTotal {
		t.Fatalf("the node holds %d tasks, want its overall quota %d", st.Inbound, fqTotal)
	}
	for _, r := range refs {
		_ = atoll.Cancel(ctx, r)
	}
	testutil.EventuallyWithin(t, time.Minute, "the driver's cancelled tasks to leave the node", func() bool {
		return c.NodeStats(1, false).Inbound == fqPerOrigin
	})

	// The flooding origin claims to leave: the node forgets its tasks and
	// its raylet drops them (else the origin could flood again and again).
	b, _ := proto.Marshal(&atollpb.NodeLoad{NodeId: origin.Bytes(), Leaving: true})
	if err := nc.Publish(cluster.LoadSubject(origin), b); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, time.Minute, "the node to drop the tasks of the origin that left", func() bool {
		n, ok := nodeStatus(ctx, c, target.String())
		return ok && n.Queued == 0 && c.NodeStats(1, false).Inbound == 0
	})
	final := c.NodeStats(1, true)
	t.Logf("after the origin left: heap %.1f MiB, %d held", heapMiB(final.HeapAllocBytes), final.Inbound)
}

func heapMiB(b uint64) float64 { return float64(b) / (1 << 20) }

func isReady(ready []atoll.Ref, r atoll.Ref) bool {
	for _, x := range ready {
		if x.ID() == r.ID() {
			return true
		}
	}
	return false
}
