package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// checkRefused checks that r refuses spec with RESOURCE_EXHAUSTED naming
// node.
func checkRefused(t *testing.T, r *atollpb.TaskResult, node ids.NodeID) {
	t.Helper()
	err := errs.FromProto(r.Error)
	var re *errs.ResourceExhaustedError
	if !errors.Is(err, errs.ErrResourceExhausted) || !errors.As(err, &re) || re.NodeID != node.String() || re.TaskID != ids.MustFromBytes(r.TaskId).String() {
		t.Fatalf("result %v (%v), want RESOURCE_EXHAUSTED from node %s", r, err, node.Short())
	}
}

// TestForwardedWorkQuota: a node holds at most MaxForwardedPerOrigin
// attempts forwarded by one origin and MaxForwarded in all; past them it
// refuses the work back to its owner with RESOURCE_EXHAUSTED (tasks and
// actor calls alike), and takes work again once what it held is answered
// or its origin dies.
func TestForwardedWorkQuota(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	c := startNode(t, ns, nil)
	b := startNode(t, ns, func(c *Config) { c.MaxForwardedPerOrigin, c.MaxForwarded = 3, 5 })

	var held []submitted
	for i := range 5 {
		a.forward(b.id, "from-a")
		if i < 3 {
			held = append(held, recv(t, b.submits, "B's raylet got no task within A's quota"))
		}
	}
	for range 2 {
		checkRefused(t, recv(t, a.results, "A's owner heard nothing of a task past the quota"), b.id)
	}
	// C is under its own quota but the node is at its overall one after
	// two: its third task, and an actor call, are refused.
	for range 3 {
		c.forward(b.id, "from-c")
	}
	held = append(held, recv(t, b.submits, "B's raylet got no task of C"), recv(t, b.submits, "B's raylet got no second task of C"))
	checkRefused(t, recv(t, c.results, "C's owner heard nothing of its task past the overall quota"), b.id)
	// (Calls come on a subject of their own, in no order with the tasks.)
	call := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "m", NumReturns: 1}
	c.system.Root.Send(c.gw.pid, &forwardCall{node: b.id, address: "actor$host", spec: call, caller: c.owner})
	checkRefused(t, recv(t, c.results, "C's owner heard nothing of its call past the overall quota"), b.id)
	st := b.sizes()
	if st.Inbound != 5 || st.ForwardsRefused != 4 || st.InboundBytes == 0 {
		t.Fatalf("B holds %d attempts (%d bytes) and refused %d; want 5 held and 4 refused", st.Inbound, st.InboundBytes, st.ForwardsRefused)
	}

	// One of A's tasks ends: A may send one more.
	b.system.Root.Send(held[0].reply, &atollpb.TaskResult{TaskId: held[0].spec.TaskId})
	if r := recv(t, a.results, "A's owner got no result"); r.Error != nil {
		t.Fatalf("result %v, want the task's success", r.Error)
	}
	a.forward(b.id, "from-a-again")
	if s := recv(t, b.submits, "B's raylet got no task after one ended"); s.spec.Name != "from-a-again" {
		t.Fatalf("B's raylet got %q", s.spec.Name)
	}
	// A leaves the cluster (or claims to): what B held for it goes from
	// the account, and from the raylet, which is told to cancel it (else
	// leaving would make room for more of it).
	b.system.Root.Send(b.gw.pid, &atollpb.NodeLoad{NodeId: a.id.Bytes(), Total: map[string]float64{"CPU": 1}})
	b.system.Root.Send(b.gw.pid, &atollpb.NodeLoad{NodeId: a.id.Bytes(), Leaving: true})
	testutil.Eventually(t, "B to forget A's work", func() bool { return b.sizes().Inbound == 2 })
	cancelled := map[ids.TaskID]bool{}
	for range 3 {
		cancelled[recv(t, b.cancels, "B's raylet was not told to cancel A's work")] = true
	}
	for _, s := range held[1:3] {
		if !cancelled[ids.MustFromBytes(s.spec.TaskId)] {
			t.Errorf("A's task %s was not cancelled", s.spec.Name)
		}
	}
	c.forward(b.id, "from-c-again")
	if s := recv(t, b.submits, "B's raylet got no task once A's work went"); s.spec.Name != "from-c-again" {
		t.Fatalf("B's raylet got %q", s.spec.Name)
	}
}

// TestQuotaCountsRefusalsForOneLogLine: the refusals between two lease
// ticks make one warning, by origin, the most refused first; origins past
// maxLoggedOrigins are summed, not listed.
func TestQuotaCountsRefusalsForOneLogLine(t *testing.T) {
	q := newQuota(&ForwarderConfig{MaxForwardedPerOrigin: 1, MaxForwarded: 1 << 20, MaxForwardedBytesPerOrigin: 1 << 20, MaxForwardedBytes: 1 << 30})
	a, b := ids.NewNodeID(), ids.NewNodeID()
	for range 3 {
		q.admit(a, 10)
	}
	q.admit(b, 10)
	q.admit(b, 10)
	if n, origins := q.takeUnlogged(); n != 3 || origins != a.Short()+"=2 "+b.Short()+"=1" {
		t.Fatalf("unlogged: %d %q", n, origins)
	}
	if n, _ := q.takeUnlogged(); n != 0 || q.refused != 3 {
		t.Fatalf("after taking them: %d unlogged, %d refused in all", n, q.refused)
	}
	for range maxLoggedOrigins + 5 {
		o := ids.NewNodeID()
		q.admit(o, 10)
		q.admit(o, 10)
	}
	if n, origins := q.takeUnlogged(); n != maxLoggedOrigins+5 || !strings.HasSuffix(origins, " and others") || len(q.unlogged) != 0 {
		t.Fatalf("unlogged: %d %q", n, origins)
	}
	q.release(a, 10)
	q.release(b, 10)
	if q.total.n != maxLoggedOrigins+5 || q.by[a] != nil {
		t.Fatalf("held %d in all, %v for a", q.total.n, q.by[a])
	}
}

// TestForwardedBytesQuota: the bytes of the specs held count too: a task
// whose spec would take its origin past MaxForwardedBytesPerOrigin is
// refused, smaller ones are not.
func TestForwardedBytesQuota(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	b := startNode(t, ns, func(c *Config) { c.MaxForwardedBytesPerOrigin, c.MaxForwardedBytes = 64<<10, 1<<20 })
	big := func(name string) *atollpb.TaskSpec {
		return &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: name, NumReturns: 1,
			Args: []*atollpb.TaskArg{{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: make([]byte, 40<<10)}}}}}}
	}
	for _, name := range []string{"first", "second"} {
		a.system.Root.Send(a.gw.pid, &forwardTask{node: b.id, spec: big(name), owner: a.owner, hops: 1})
	}
	if s := recv(t, b.submits, "B's raylet got no task"); s.spec.Name != "first" {
		t.Fatalf("B's raylet got %q", s.spec.Name)
	}
	checkRefused(t, recv(t, a.results, "A's owner heard nothing of the task past the bytes quota"), b.id)
	a.forward(b.id, "small")
	if s := recv(t, b.submits, "B's raylet got no small task"); s.spec.Name != "small" {
		t.Fatalf("B's raylet got %q", s.spec.Name)
	}
	if st := b.sizes(); st.Inbound != 2 || st.InboundBytes < 40<<10 || st.InboundBytes > 64<<10 || st.ForwardsRefused != 1 {
		t.Fatalf("B holds %d attempts, %d bytes, refused %d", st.Inbound, st.InboundBytes, st.ForwardsRefused)
	}
}

func TestForwardQuotasFromTheEnvironment(t *testing.T) {
	c := Config{}
	if err := c.withLimits(); err != nil || c.MaxForwardedPerOrigin != DefaultMaxForwardedPerOrigin || c.MaxForwarded != DefaultMaxForwarded ||
		c.MaxForwardedBytesPerOrigin != DefaultMaxForwardedBytesPerOrigin || c.MaxForwardedBytes != DefaultMaxForwardedBytes {
		t.Fatalf("defaults %d %d %d %d, %v", c.MaxForwardedPerOrigin, c.MaxForwarded, c.MaxForwardedBytesPerOrigin, c.MaxForwardedBytes, err)
	}
	t.Setenv(EnvMaxForwardedPerOrigin, "10")
	t.Setenv(EnvMaxForwardedBytes, "1000")
	c = Config{MaxForwarded: 20}
	if err := c.withLimits(); err != nil || c.MaxForwardedPerOrigin != 10 || c.MaxForwarded != 20 || c.MaxForwardedBytes != 1000 {
		t.Fatalf("from the environment: %d %d %d, %v", c.MaxForwardedPerOrigin, c.MaxForwarded, c.MaxForwardedBytes, err)
	}
	t.Setenv(EnvMaxForwarded, "-3")
	if err := (&Config{}).withLimits(); err == nil {
		t.Fatalf("%s=-3 accepted", EnvMaxForwarded)
	}
}
