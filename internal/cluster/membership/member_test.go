package membership

import (
	"bytes"
	"fmt"
	"github.com/atoll-runtime/atoll/internal/testutil"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// testLogger discards memberlist's debug chatter unless MEMBERSHIP_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("MEMBERSHIP_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// node is a started member with a channel subscription.
type node struct {
	*Member
	events <-chan Event
}

func startNode(t *testing.T, meta string, edit func(*Config)) node {
	t.Helper()
	cfg := Config{
		NodeID:   ids.NewNodeID(),
		BindAddr: "127.0.0.1",
		Meta:     []byte(meta),
		Logger:   testLogger(),
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	ev, cancel := m.Subscribe()
	t.Cleanup(cancel)
	return node{m, ev}
}

// startCluster starts n members; all but the first join the first, and every
// member waits until it has seen the others join.
func startCluster(t *testing.T, n int, edit func(*Config)) []node {
	t.Helper()
	nodes := make([]node, n)
	for i := range nodes {
		nodes[i] = startNode(t, fmt.Sprintf("raylet-%d", i), edit)
	}
	for _, nd := range nodes[1:] {
		if k, err := nd.Join([]string{nodes[0].Addr()}); err != nil || k != 1 {
			t.Fatalf("Join: %d, %v", k, err)
		}
	}
	for i, nd := range nodes {
		want := map[ids.NodeID]string{}
		for j, o := range nodes {
			if j != i {
				want[o.ID()] = fmt.Sprintf("raylet-%d", j)
			}
		}
		for len(want) > 0 {
			e := next(t, nd.events, 10*time.Second)
			j, ok := e.(NodeJoined)
			if !ok {
				t.Fatalf("node %d: got %#v, want NodeJoined", i, e)
			}
			meta, ok := want[j.ID]
			if !ok {
				t.Fatalf("node %d: unexpected join of %s", i, j.ID.Short())
			}
			if string(j.Meta) != meta {
				t.Fatalf("node %d: join of %s with meta %q, want %q", i, j.ID.Short(), j.Meta, meta)
			}
			delete(want, j.ID)
		}
	}
	return nodes
}

// next returns the next event, failing the test after timeout.
func next(t *testing.T, ch <-chan Event, timeout time.Duration) Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
		return nil
	}
}

// waitLeft waits for the NodeLeft of id, skipping other events.
func waitLeft(t *testing.T, ch <-chan Event, id ids.NodeID, timeout time.Duration) NodeLeft {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-ch:
			if l, ok := e.(NodeLeft); ok && l.ID == id {
				return l
			}
		case <-deadline:
			t.Fatalf("no NodeLeft for %s within %v", id.Short(), timeout)
		}
	}
}

func TestThreeMembersSeeEachOther(t *testing.T) {
	// Member 0 also delivers to an actor, to check the actor path.
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	viaActor := make(chan Event, 16)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if e, ok := c.Message().(Event); ok {
			viaActor <- e
		}
	}))
	defer sys.Root.Stop(pid)
	first := true
	nodes := startCluster(t, 3, func(c *Config) {
		if first {
			c.System, c.Events = sys, pid
			first = false
		}
	})

	for i, nd := range nodes {
		i := i
		testutil.EventuallyWithin(t, 5*time.Second, "3 members", func() bool { return len(nd.Members()) == 3 })
		for _, m := range nd.Members() {
			j := -1
			for k, o := range nodes {
				if o.ID() == m.ID {
					j = k
				}
			}
			if j < 0 || string(m.Meta) != fmt.Sprintf("raylet-%d", j) || m.Addr != nodes[j].Addr() {
				t.Errorf("node %d: member %+v not as started", i, m)
			}
		}
	}

	got := map[ids.NodeID][]byte{}
	for len(got) < 2 {
		e := next(t, viaActor, 5*time.Second)
		if j, ok := e.(NodeJoined); ok {
			got[j.ID] = j.Meta
		}
	}
	for _, k := range []int{1, 2} {
		if string(got[nodes[k].ID()]) != fmt.Sprintf("raylet-%d", k) {
			t.Errorf("actor: join of node %d has meta %q", k, got[nodes[k].ID()])
		}
	}
}

func TestGracefulLeaveIsNotDead(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	gone := nodes[2]
	if err := gone.Leave(2 * time.Second); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if err := gone.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for i, nd := range nodes[:2] {
		l := waitLeft(t, nd.events, gone.ID(), 5*time.Second)
		if l.Dead {
			t.Errorf("node %d: graceful leave reported as dead: %+v", i, l)
		}
		if l.Addr != gone.Addr() {
			t.Errorf("node %d: leave addr %s, want %s", i, l.Addr, gone.Addr())
		}
		testutil.EventuallyWithin(t, 5*time.Second, "2 members", func() bool { return len(nd.Members()) == 2 })
	}
}

func TestAbruptShutdownDeclaredDeadWithinBudget(t *testing.T) {
	nodes := startCluster(t, 3, nil) // default budget
	budget := DefaultFailureBudget
	const slack = time.Second
	gone := nodes[2]
	start := time.Now()
	if err := gone.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for i, nd := range nodes[:2] {
		l := waitLeft(t, nd.events, gone.ID(), budget+slack)
		took := time.Since(start)
		if !l.Dead {
			t.Errorf("node %d: failure reported as graceful leave: %+v", i, l)
		}
		t.Logf("node %d declared the failed node dead after %v (budget %v)", i, took.Round(time.Millisecond), budget)
		if took > budget+slack {
			t.Errorf("node %d: detection took %v, budget %v + slack %v", i, took, budget, slack)
		}
	}
}

func TestUpdateMeta(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	if err := nodes[1].UpdateMeta([]byte("raylet-1 gpus=1"), 2*time.Second); err != nil {
		t.Fatalf("UpdateMeta: %v", err)
	}
	e := next(t, nodes[0].events, 5*time.Second)
	u, ok := e.(NodeUpdated)
	if !ok || u.ID != nodes[1].ID() || string(u.Meta) != "raylet-1 gpus=1" {
		t.Fatalf("got %#v, want NodeUpdated with the new meta", e)
	}
}

// TestSlowReceiverNeverBlocks: with an actor stuck in Receive and a channel
// subscriber that never reads, the delegate still returns at once and
// memberlist keeps working.
func TestSlowReceiverNeverBlocks(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	release := make(chan struct{})
	stuck := make(chan struct{}, 1)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(Event); ok {
			select {
			case stuck <- struct{}{}:
			default:
			}
			<-release
		}
	}, actor.WithMailbox(actor.Bounded(4))))
	defer sys.Root.Stop(pid)

	slow := startNode(t, "slow", func(c *Config) { c.System, c.Events = sys, pid })
	_, cancel := slow.Subscribe() // never read
	defer cancel()

	// Directly: many callbacks return although nothing drains (a
	// callback that blocked would wait for the receivers forever; how
	// long they take on a busy machine is not the point, only logged).
	const n = 10000
	peer := slow.list.LocalNode() // a template node; renamed below
	start := time.Now()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for i := range n {
			p := *peer
			id := ids.NewNodeID()
			p.Name = id.String()
			p.Meta = encodeMeta(0, []byte{byte(i)})
			slow.del.NotifyJoin(&p)
			slow.del.NotifyUpdate(&p)
			slow.del.NotifyLeave(&p)
		}
	}()
	select {
	case <-returned:
		t.Logf("%d callbacks took %v with blocked receivers", 3*n, time.Since(start))
	case <-time.After(time.Minute):
		t.Fatalf("%d callbacks did not return within a minute while the receivers were blocked", 3*n)
	}
	select {
	case <-stuck:
	case <-time.After(5 * time.Second):
		t.Fatal("actor never received an event")
	}

	// Through memberlist: others join and see the slow node, and its own
	// view converges, while its receivers are stuck.
	a := startNode(t, "a", nil)
	b := startNode(t, "b", nil)
	for _, x := range []node{a, b} {
		if _, err := x.Join([]string{slow.Addr()}); err != nil {
			t.Fatalf("Join: %v", err)
		}
	}
	testutil.EventuallyWithin(t, 5*time.Second, "slow node sees 3 members", func() bool { return len(slow.Members()) == 3 })
	for _, x := range []node{a, b} {
		for seen := 0; seen < 2; {
			if j, ok := next(t, x.events, 5*time.Second).(NodeJoined); ok && (j.ID == slow.ID() && bytes.Equal(j.Meta, []byte("slow")) || j.ID != slow.ID()) {
				seen++
			}
		}
	}

	// Unblock the actor, then stop the member before the actor, so that no
	// queued event ends up a dead letter.
	close(release)
	if err := slow.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	id := ids.NewNodeID()
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	bad := []Config{
		{},
		{NodeID: id, BindPort: 70000},
		{NodeID: id, Meta: make([]byte, MaxMetaSize+1)},
		{NodeID: id, FailureBudget: 100 * time.Millisecond},
		{NodeID: id, System: sys},
	}
	for i, c := range bad {
		if _, err := c.validate(); err == nil {
			t.Errorf("config %d: no error", i)
		}
	}
	c, err := Config{NodeID: id}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if c.FailureBudget != DefaultFailureBudget || c.BindAddr != "0.0.0.0" || c.Logger == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
	mc := c.memberlistConfig(nil, nil)
	if mc.ProbeInterval*10 > c.FailureBudget || mc.ProbeTimeout >= mc.ProbeInterval || mc.Name != id.String() {
		t.Errorf("derived memberlist config: probe %v timeout %v name %s", mc.ProbeInterval, mc.ProbeTimeout, mc.Name)
	}
}

// TestSecretKey: members with the cluster's key gossip; one without it,
// or with another key, cannot join them, and they never see it.
func TestSecretKey(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	nodes := startCluster(t, 2, func(c *Config) { c.SecretKey = key })
	for _, other := range [][]byte{nil, bytes.Repeat([]byte{8}, 32)} {
		stranger := startNode(t, "stranger", func(c *Config) { c.SecretKey = other })
		if _, err := stranger.Join([]string{nodes[0].Addr()}); err == nil {
			t.Fatalf("a member with key %x joined a cluster keyed %x", other, key)
		}
		if n := len(nodes[0].Members()); n != 2 {
			t.Fatalf("the keyed cluster has %d members after a stranger tried to join, want 2", n)
		}
		if n := len(stranger.Members()); n != 1 {
			t.Fatalf("the stranger sees %d members, want only itself", n)
		}
	}
}
