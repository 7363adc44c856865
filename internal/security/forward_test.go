package security

import (
	"context"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestForwardFromNonMemberRefused: a holder of the secret forwards tasks
// no node can run to a node, claiming an origin that never joined the
// gossip. Such an origin is never declared dead, so before the rule the
// node queued its work for ever. Now the node holds it for the stranger
// grace (2 s here) in case the join is on its way, then drops it from its
// queues and answers each attempt with PERMISSION_DENIED; later work from
// that origin is refused at once.
func TestForwardFromNonMemberRefused(t *testing.T) {
	const tasks = 100
	c := testcluster.Start(t, testcluster.Options{Nodes: 2,
		Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 64 << 20, FailureTimeout: 5 * time.Second},
		Env:  []string{cluster.EnvStrangerGrace + "=2s"}})
	raw, err := hex.DecodeString(c.Node(1).ID)
	if err != nil {
		t.Fatal(err)
	}
	target, err := ids.FromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	origin := ids.NewNodeID()
	nc := c.DialAs(cluster.NodeUser(origin))

	var mu sync.Mutex
	codes := map[atollpb.ErrorCode]int{}
	sub, err := nc.Subscribe(cluster.ResultSubject(origin), func(m *nats.Msg) {
		var fr atollpb.ForwardedResult
		code := atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED
		if proto.Unmarshal(m.Data, &fr) == nil {
			code = fr.GetResult().GetError().GetCode()
		}
		mu.Lock()
		codes[code]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The nodes' worker binary (this test binary): a task naming another
	// is refused before it queues.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	forward := func() {
		spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), JobId: ids.NewJobID().Bytes(), Function: "nm.none", Name: "nm.infeasible",
			NumReturns: 1, Resources: map[string]float64{"CPU": 1, "no-node-has-it": 1},
			OwnerId: ids.NewWorkerID().Bytes(), OwnerAddress: origin.String(), WorkerBinary: exe}
		b, err := proto.Marshal(&atollpb.ForwardTask{Spec: spec, OriginNode: origin.Bytes(), Hops: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(cluster.TaskSubject(target), b); err != nil {
			t.Fatal(err)
		}
	}
	denied := func() int {
		mu.Lock()
		defer mu.Unlock()
		return codes[atollpb.ErrorCode_PERMISSION_DENIED]
	}
	queued := func() int {
		st, err := clusterclient.GetStatus(context.Background(), c.Address(), c.Credentials())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range st.Nodes {
			if n.NodeID == target.String() {
				return n.Queued
			}
		}
		t.Fatalf("node %s is not in the status", target.Short())
		return 0
	}

	for range tasks {
		forward()
	}
	testutil.EventuallyWithin(t, 30*time.Second, "the node to take in the stranger's tasks", func() bool {
		return c.NodeStats(1, false).Inbound == tasks
	})
	start := time.Now()
	testutil.EventuallyWithin(t, time.Minute, "the node to drop and refuse the stranger's tasks", func() bool {
		return denied() == tasks && c.NodeStats(1, false).Inbound == 0
	})
	t.Logf("%d tasks from a non-member origin held, then refused %v later", tasks, time.Since(start).Round(time.Millisecond))
	testutil.EventuallyWithin(t, 30*time.Second, "the node's raylet to drop them", func() bool { return queued() == 0 })

	// Refused at once from now on.
	forward()
	testutil.EventuallyWithin(t, 30*time.Second, "a later task to be refused", func() bool { return denied() == tasks+1 })
	if n := c.NodeStats(1, false).Inbound; n != 0 {
		t.Errorf("the node holds %d tasks of the non-member after refusing it", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(codes) != 1 {
		t.Errorf("the origin got %v, want only PERMISSION_DENIED", codes)
	}
}
