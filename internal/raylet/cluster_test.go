package raylet_test

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

type forwarded struct {
	node ids.NodeID
	spec *atollpb.TaskSpec
	hops int32
}

// clusterRaylet starts a one-CPU raylet in a cluster whose forwards are
// reported on the returned channel.
func clusterRaylet(t *testing.T) (*actor.ActorSystem, *actor.PID, ids.NodeID, chan forwarded, *blockingExecutor) {
	t.Helper()
	fwd := make(chan forwarded, 64)
	exec := &blockingExecutor{release: make(chan struct{})}
	t.Cleanup(func() { close(exec.release) })
	self := ids.NewNodeID()
	system, pid := startRaylet(t, raylet.Config{
		NodeID: self, Resources: raylet.Resources{raylet.CPU: 1},
		Cluster: &raylet.ClusterConfig{
			Forward: func(node ids.NodeID, spec *atollpb.TaskSpec, _ *actor.PID, hops int32) {
				fwd <- forwarded{node, spec, hops}
			},
			CallActor: func(ids.NodeID, string, *atollpb.TaskSpec, *actor.PID) {},
			Cancel:    func(ids.TaskID, bool) {},
			KillActor: func(*atollpb.KillActor) {},
		},
	}, exec)
	return system, pid, self, fwd, exec
}

func submitN(system *actor.ActorSystem, pid *actor.PID, n int, strategy *atollpb.SchedulingStrategy) []ids.TaskID {
	out := make([]ids.TaskID, n)
	for i := range out {
		out[i] = ids.NewTaskID()
		system.Root.Send(pid, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{
			TaskId: out[i].Bytes(), Name: "t", Function: "t", NumReturns: 1,
			Resources: map[string]float64{raylet.CPU: 1}, Scheduling: strategy,
		}})
	}
	return out
}

// TestSpillBackToIdlePeer: tasks queued behind a busy CPU move to a peer
// that reports room, affinity-pinned ones stay.
func TestSpillBackToIdlePeer(t *testing.T) {
	system, pid, self, fwd, _ := clusterRaylet(t)
	// No peers yet: everything is placed here; one runs, the rest queue.
	submitN(system, pid, 3, nil)
	pinned := &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, NodeId: self.Bytes()}
	submitN(system, pid, 1, pinned)
	if st := state(t, system, pid); st.Running != 1 || st.Queued != 3 {
		t.Fatalf("before any peer: %d running, %d queued; want 1 and 3", st.Running, st.Queued)
	}
	select {
	case f := <-fwd:
		t.Fatalf("forwarded %s with no peer", f.node.Short())
	default:
	}

	// A peer with two free CPUs and no queue appears: two queued tasks
	// spill back to it; the pinned one stays.
	peer := ids.NewNodeID()
	system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{{ID: peer, Total: raylet.Resources{raylet.CPU: 2}, Available: raylet.Resources{raylet.CPU: 2}}}})
	for range 2 {
		f := recv(t, fwd, "no task spilled back to the idle peer")
		if f.node != peer || f.hops != 1 || f.spec.Scheduling != nil {
			t.Fatalf("forwarded to %s (hops %d, strategy %v); want the unpinned tasks to the peer with hops 1", f.node.Short(), f.hops, f.spec.Scheduling)
		}
	}
	st := state(t, system, pid)
	if st.Running != 1 || st.Queued != 1 || st.Stats.SpilledBack != 2 {
		t.Fatalf("after spillback: %d running, %d queued, %d spilled back; want 1, 1, 2", st.Running, st.Queued, st.Stats.SpilledBack)
	}
	// The same view again: the peer's room is reserved until its next
	// report, nothing more moves.
	system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{{ID: peer, Total: raylet.Resources{raylet.CPU: 2}, Available: raylet.Resources{raylet.CPU: 0}, QueuedCPU: 0}}})
	if st := state(t, system, pid); st.Queued != 1 {
		t.Fatalf("queued %d after a full peer's report, want 1", st.Queued)
	}
	select {
	case f := <-fwd:
		t.Fatalf("forwarded %s to a full peer", f.spec.Name)
	default:
	}
}

// TestForwardedTaskSpillsBackWhenInfeasible: a task placed here by a peer
// that this node cannot run at all goes on to a node that can.
func TestForwardedTaskSpillsBackWhenInfeasible(t *testing.T) {
	system, pid, _, fwd, _ := clusterRaylet(t)
	gpu := ids.NewNodeID()
	system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{{ID: gpu, Total: raylet.Resources{raylet.CPU: 1, "GPU": 1}, Available: raylet.Resources{raylet.CPU: 1, "GPU": 1}}}})
	id := ids.NewTaskID()
	system.Root.Send(pid, &atollpb.SubmitTask{Forwarded: true, Hops: 1, Spec: &atollpb.TaskSpec{
		TaskId: id.Bytes(), Name: "gpu", Function: "gpu", NumReturns: 1, Resources: map[string]float64{raylet.CPU: 1, "GPU": 1},
	}})
	f := recv(t, fwd, "an infeasible forwarded task did not spill back")
	if f.node != gpu || f.hops != 2 {
		t.Fatalf("spilled back to %s with hops %d, want the GPU node with hops 2", f.node.Short(), f.hops)
	}
}

// TestWaitingTaskPlacedWhenANodeCanRunIt: a task no node can run waits;
// views that change only the peers' load leave it waiting (they are not
// placed again on every report), and it goes to a node that can run it
// as soon as one joins.
func TestWaitingTaskPlacedWhenANodeCanRunIt(t *testing.T) {
	system, pid, _, fwd, _ := clusterRaylet(t)
	cpu := raylet.NodeView{ID: ids.NewNodeID(), Total: raylet.Resources{raylet.CPU: 2}, Available: raylet.Resources{raylet.CPU: 2}}
	system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{cpu}})
	system.Root.Send(pid, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{
		TaskId: ids.NewTaskID().Bytes(), Name: "gpu", Function: "gpu", NumReturns: 1, Resources: map[string]float64{raylet.CPU: 1, "GPU": 1},
	}})
	for i := range 3 {
		cpu.Available = raylet.Resources{raylet.CPU: float64(i)}
		system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{cpu}})
	}
	if st := state(t, system, pid); st.Queued != 1 {
		t.Fatalf("%d queued, want the task waiting", st.Queued)
	}
	gpu := raylet.NodeView{ID: ids.NewNodeID(), Total: raylet.Resources{raylet.CPU: 1, "GPU": 1}, Available: raylet.Resources{raylet.CPU: 1, "GPU": 1}}
	system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{cpu, gpu}})
	if f := recv(t, fwd, "the waiting task did not go to the node that joined"); f.node != gpu.ID || f.spec.Name != "gpu" {
		t.Fatalf("forwarded %s to %s, want gpu to the GPU node", f.spec.Name, f.node.Short())
	}
	if st := state(t, system, pid); st.Queued != 0 {
		t.Fatalf("%d queued after the GPU node joined", st.Queued)
	}
}

// TestDrainPlacesElsewhere: a draining raylet sends new tasks, its own
// and those peers forward to it, to another node, while the task it runs
// goes on; a hard affinity to it still runs here.
func TestDrainPlacesElsewhere(t *testing.T) {
	system, pid, self, fwd, _ := clusterRaylet(t)
	peer := ids.NewNodeID()
	system.Root.Send(pid, &raylet.PeerView{Nodes: []raylet.NodeView{{ID: peer, Total: raylet.Resources{raylet.CPU: 4}, Available: raylet.Resources{raylet.CPU: 4}}}})
	submitN(system, pid, 1, nil)
	if st := state(t, system, pid); st.Running != 1 || st.Draining {
		t.Fatalf("before the drain: %d running, draining %v; want 1, false", st.Running, st.Draining)
	}
	system.Root.Send(pid, &raylet.Drain{})
	submitN(system, pid, 2, nil)
	system.Root.Send(pid, &atollpb.SubmitTask{Forwarded: true, Hops: 1, Spec: &atollpb.TaskSpec{
		TaskId: ids.NewTaskID().Bytes(), Name: "fwd", Function: "fwd", NumReturns: 1, Resources: map[string]float64{raylet.CPU: 1},
	}})
	for range 3 {
		if f := recv(t, fwd, "a task submitted to the draining raylet stayed"); f.node != peer {
			t.Fatalf("forwarded to %s, want the peer", f.node.Short())
		}
	}
	submitN(system, pid, 1, &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, NodeId: self.Bytes()})
	if st := state(t, system, pid); !st.Draining || st.Running != 1 || st.Queued != 1 {
		t.Fatalf("draining: %d running, %d queued, draining %v; want 1, 1 (the pinned task), true", st.Running, st.Queued, st.Draining)
	}
}

// TestCancelOneAttempt: a cancel of one attempt (a gateway dropping the
// work of a dead origin) leaves a newer attempt of the task alone; a
// cancel of the attempt it holds cancels it.
func TestCancelOneAttempt(t *testing.T) {
	system, pid, _, _, _ := clusterRaylet(t)
	results := make(chan *atollpb.TaskResult, 8)
	owner := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*atollpb.TaskResult); ok {
			results <- r
		}
	}))
	submit := func(id ids.TaskID, attempt int32) {
		system.Root.RequestWithCustomSender(pid, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{
			TaskId: id.Bytes(), Attempt: attempt, Name: "t", Function: "t", NumReturns: 1, Resources: map[string]float64{raylet.CPU: 1},
		}}, owner) // no peers: it stays here
	}
	running, queued := ids.NewTaskID(), ids.NewTaskID()
	submit(running, 0) // holds the only CPU
	submit(queued, 1)  // a retry: attempt 1
	if st := state(t, system, pid); st.Running != 1 || st.Queued != 1 {
		t.Fatalf("%d running, %d queued; want 1, 1", st.Running, st.Queued)
	}
	system.Root.Send(pid, &atollpb.CancelTask{TaskId: queued.Bytes(), OneAttempt: true, Attempt: 0})
	if st := state(t, system, pid); st.Queued != 1 {
		t.Fatalf("a cancel of attempt 0 cancelled attempt 1 (%d queued)", st.Queued)
	}
	system.Root.Send(pid, &atollpb.CancelTask{TaskId: queued.Bytes(), OneAttempt: true, Attempt: 1})
	r := recv(t, results, "no result for the cancelled attempt")
	if ids.MustFromBytes(r.TaskId) != queued || r.Attempt != 1 || r.Error.GetCode() != atollpb.ErrorCode_CANCELLED {
		t.Fatalf("result %v, want attempt 1 of the queued task CANCELLED", r)
	}
}
