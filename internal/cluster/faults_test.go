package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A node's FaultLog passes the reader's checks; each malformed variant,
// as a broken or hostile node might send, is refused.
func TestFaultLogValidation(t *testing.T) {
	node := ids.NewNodeID()
	f := actors.NewFaultInjector()
	f.Add(actors.Rule{Name: strings.Repeat("r", 2*MaxFaultNameBytes), Kind: actors.FaultDuplicate, Count: 4})
	good := func() *atollpb.FaultLog { return FaultLogOf(node, f, 0, 100) }
	if l := good(); len(l.Events) != 0 || !l.Injector || validFaultLog(l, node, 0) != nil {
		t.Fatalf("an empty log: %+v", l)
	}
	injectFaults(t, f, 4)
	l := good()
	if err := validFaultLog(l, node, 0); err != nil || len(l.Events) != 4 || len(l.Events[0].Rule) != MaxFaultNameBytes {
		t.Fatalf("good log: %v, %d events", err, len(l.Events))
	}
	if l := FaultLogOf(node, nil, 0, 10); l.Injector || validFaultLog(l, node, 0) != nil {
		t.Fatalf("no injector: %+v", l)
	}
	for name, c := range map[string]struct {
		mutate func(*atollpb.FaultLog)
		want   string
	}{
		"other node":    {func(l *atollpb.FaultLog) { l.NodeId = ids.NewNodeID().Bytes() }, "answered by"},
		"no node":       {func(l *atollpb.FaultLog) { l.NodeId = nil }, "node_id"},
		"out of order":  {func(l *atollpb.FaultLog) { l.Events[1], l.Events[2] = l.Events[2], l.Events[1] }, "after"},
		"past total":    {func(l *atollpb.FaultLog) { l.Events[3].Seq = 99 }, "after"},
		"bad kind":      {func(l *atollpb.FaultLog) { l.Events[0].Kind = 9 }, "kind"},
		"long name":     {func(l *atollpb.FaultLog) { l.Events[0].Actor = strings.Repeat("a", MaxFaultNameBytes+1) }, "past"},
		"nil event":     {func(l *atollpb.FaultLog) { l.Events[0] = nil }, "nil"},
		"kinds ≠ total": {func(l *atollpb.FaultLog) { l.Delayed++ }, "by kind"},
		"rules ≠ total": {func(l *atollpb.FaultLog) { l.ByRule["x"] = 1 }, "by rule"},
		"too many": {func(l *atollpb.FaultLog) {
			for range MaxFaultEventsPerReply {
				l.Events = append(l.Events, l.Events[0])
			}
		}, "at most"},
	} {
		t.Run(name, func(t *testing.T) {
			l := good()
			c.mutate(l)
			if err := validFaultLog(l, node, 0); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	// A fault at a point (a worker killed) travels with its point and task.
	f.Record(actors.FaultEvent{Rule: "kill", Kind: actors.FaultKillWorker, Point: "before-execute", Task: "sort.map"})
	l = good()
	if err := validFaultLog(l, node, 0); err != nil || l.Recorded != 1 {
		t.Fatalf("a log with a recorded fault: %v, recorded %d", err, l.Recorded)
	}
	if e := l.Events[len(l.Events)-1]; e.Kind != uint32(actors.FaultKillWorker) || e.Point != "before-execute" || e.Task != "sort.map" {
		t.Fatalf("recorded event %+v", e)
	}
	// A page asked for after seq 2 must not repeat event 2.
	if err := validFaultLog(good(), node, 2); err == nil {
		t.Fatal("events at or before after_seq accepted")
	}
}

// injectFaults sends n messages through f to an actor and waits until
// f injected n faults (f's rules fault every message).
func injectFaults(t *testing.T, f *actors.FaultInjector, n uint64) {
	t.Helper()
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}, actor.WithReceiverMiddleware(f.ReceiverMiddleware())))
	for range n {
		sys.Root.Send(pid, &atollpb.FaultLogRequest{})
	}
	testutil.Eventually(t, fmt.Sprintf("%d faults", n), func() bool {
		st := f.Stats()
		return st.Dropped+st.Delayed+st.Duplicated >= n
	})
}
