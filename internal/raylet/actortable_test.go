package raylet_test

import (
	"fmt"
	"testing"

	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestDeadActorsLeaveTheTable: a raylet's table of hosted actors holds
// live actors only: killed actors, actors whose constructor failed and
// actors whose restarts ran out all leave it (and their restart budgets
// with them), however many come and go.
func TestDeadActorsLeaveTheTable(t *testing.T) {
	reports := make(chan *atollpb.ActorInfo, 1024)
	exec := &blockingExecutor{release: make(chan struct{})}
	t.Cleanup(func() { close(exec.release) })
	system, pid := startRaylet(t, raylet.Config{Resources: raylet.Resources{raylet.CPU: 1},
		ReportActor: func(a *atollpb.ActorInfo) { reports <- a }}, exec)
	results := make(chan *atollpb.TaskResult, 1024)
	owner := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*atollpb.TaskResult); ok {
			results <- r
		}
	}))
	create := func(name string, maxRestarts int32) ids.ActorID {
		id := ids.NewActorID()
		system.Root.RequestWithCustomSender(pid, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{
			TaskId: ids.NewTaskID().Bytes(), Type: atollpb.TaskType_ACTOR_CREATION_TASK, ActorId: id.Bytes(), Name: name, Function: "A",
			ActorCreation: &atollpb.ActorCreationSpec{ActorType: "A", Name: name, MaxRestarts: maxRestarts},
		}}, owner)
		return id
	}
	const rounds = 3
	const perRound = 20
	for round := range rounds {
		var live []ids.ActorID
		for i := range perRound {
			live = append(live, create(fmt.Sprintf("a%d", i), 0))
		}
		create("broken", 0)
		for range perRound + 1 {
			recv(t, results, "an actor creation was not answered")
		}
		if st := state(t, system, pid); st.Actors != perRound {
			t.Fatalf("round %d: %d hosted actors after the creations, want %d (the broken one gone)", round, st.Actors, perRound)
		}
		// Half are killed for good, half crash with no restart left.
		for i, id := range live {
			if i%2 == 0 {
				system.Root.Send(pid, &atollpb.KillActor{ActorId: id.Bytes(), NoRestart: true, Reason: "test"})
			} else {
				system.Root.Send(pid, &atollpb.KillActor{ActorId: id.Bytes(), Reason: "crash"})
			}
		}
		testutil.Eventually(t, "every actor to leave the table", func() bool { return state(t, system, pid).Actors == 0 })
	}
	dead := 0
	for len(reports) > 0 {
		if (<-reports).State == atollpb.ActorState_ACTOR_DEAD {
			dead++
		}
	}
	if want := rounds * (perRound + 1); dead != want {
		t.Errorf("%d DEAD reports, want %d", dead, want)
	}
}
