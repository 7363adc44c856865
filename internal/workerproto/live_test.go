package workerproto

import (
	"os"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// stopThenRestart is a supervisor that answers a child's failure with a
// Stop and then a Restart: the order protoactor sees when a host crashes
// while it is being stopped (its raylet stopping, or the actor killed)
// and the supervisor's restart comes after the stop. The Restart is
// posted to the child's mailbox itself: sent to its PID, it would go to
// the dead letters whenever the child had finished stopping first.
type stopThenRestart struct{}

func (stopThenRestart) HandleFailure(system *actor.ActorSystem, _ actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, _ any, _ any) {
	proc, ok := system.ProcessRegistry.Get(child)
	system.Root.Stop(child)
	if ok {
		proc.SendSystemMessage(child, &actor.Restart{})
	}
}

// An actor host restarted after it stopped starts no worker, and leaves
// none running: the worker it had is ended, and the restart is refused.
func TestStoppedHostStartsNoWorker(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			system := actors.NewSystem(nil)
			defer system.Shutdown()
			store := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
			started := make(chan *raylet.ActorStarted, 8)
			rl := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if m, ok := c.Message().(*raylet.ActorStarted); ok {
					started <- m
				}
			}))
			cfg := tr.config(t, store) // what the raylet would default, set here
			cfg.StartTimeout = waitTimeout
			if cfg.InProcess == nil {
				exe, err := os.Executable()
				if err != nil {
					t.Fatal(err)
				}
				cfg.Binary, cfg.Args, cfg.Output = exe, os.Args[1:], os.Stderr
			}
			ws := New()
			id := ids.NewActorID()
			spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Type: atollpb.TaskType_ACTOR_CREATION_TASK, ActorId: id.Bytes(),
				Name: "A", Function: "A", ActorCreation: &atollpb.ActorCreationSpec{ActorType: "A", MaxRestarts: 1}}
			host := ws.ActorHost(raylet.HostSpec{Actor: id, Spec: spec, Worker: raylet.Worker{ID: ids.NewWorkerID(), NodeID: ids.NewNodeID()},
				Config: cfg, Raylet: rl, Deliver: func(*actor.PID, *atollpb.TaskResult) {}, PipelineDepth: 1})
			children := make(chan *actor.PID, 1)
			parent := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if _, ok := c.Message().(*actor.Started); ok {
					children <- c.Spawn(actor.PropsFromProducer(host))
				}
			}, actor.WithSupervisor(stopThenRestart{})))
			defer func() { _ = system.Root.StopFuture(parent).Wait() }()
			child := <-children
			select {
			case m := <-started:
				if m.Err != nil {
					t.Fatalf("the actor did not start: %v", m.Err)
				}
			case <-time.After(waitTimeout):
				t.Fatalf("after %v: the actor did not start", waitTimeout)
			}
			ws.hosts.mu.RLock()
			state := ws.hosts.m[child.Id]
			ws.hosts.mu.RUnlock()
			if state == nil || ws.Running() != 1 {
				t.Fatalf("host registered %v, %d workers running; want it registered and 1", state != nil, ws.Running())
			}

			system.Root.Send(child, &raylet.CrashActor{Reason: "a test"})
			refused := func() int {
				state.mu.Lock()
				defer state.mu.Unlock()
				return state.refused
			}
			testutil.EventuallyWithin(t, waitTimeout, "the restart after the stop refused, and no worker running",
				func() bool { return refused() == 1 && ws.Running() == 0 })
			if n := ws.Reap(time.Second); n != 0 {
				t.Fatalf("Reap found %d workers running, want 0", n)
			}
		})
	}
}
