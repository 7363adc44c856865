package workerproto

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Both ends of the protocol driven against each other: a real raylet
// with this package's pool workers and actor hosts on one side, Servers
// with the scripted executor (script_test.go) on the other, over each
// transport: worker processes (this test binary re-executed) and
// in-process workers (pipes).

// transports are the two ways a raylet runs its workers.
var transports = []struct {
	name   string
	config func(t *testing.T, store *actor.PID) *raylet.ProcessConfig
}{
	{"process", func(t *testing.T, store *actor.PID) *raylet.ProcessConfig {
		arena, err := os.CreateTemp(t.TempDir(), "arena")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { arena.Close() })
		if err := arena.Truncate(1 << 20); err != nil {
			t.Fatal(err)
		}
		return &raylet.ProcessConfig{Arena: arena, ArenaSize: 1 << 20, Store: store}
	}},
	{"inprocess", func(_ *testing.T, store *actor.PID) *raylet.ProcessConfig {
		return &raylet.ProcessConfig{Store: store, InProcess: func(id ids.WorkerID, _ ids.NodeID, conn workerconn.Endpoint) error {
			var srv *Server
			srv = serveScripted(conn, id, func() { srv.Conn().Close() })
			go srv.Serve(os.Getpid())
			return nil
		}}
	}},
}

// env is a raylet whose workers speak the protocol, and an owner that
// collects the results of what it submits.
type env struct {
	t       *testing.T
	system  *actor.ActorSystem
	raylet  *actor.PID
	owner   *actor.PID
	workers Workers
	results chan *atollpb.TaskResult
}

// overTransports runs test once per transport, each with a fresh raylet
// (pipeline depth depth).
func overTransports(t *testing.T, depth int, test func(t *testing.T, e *env)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			system := actors.NewSystem(nil)
			store := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) // the scripts use no store
			ws := New()
			props, err := raylet.NewProps(raylet.Config{Resources: raylet.Resources{raylet.CPU: 2}, NumWorkers: 2, PipelineDepth: depth,
				Process: tr.config(t, store), Workers: ws})
			if err != nil {
				t.Fatal(err)
			}
			pid, err := system.Root.SpawnNamed(props, "raylet")
			if err != nil {
				t.Fatal(err)
			}
			e := &env{t: t, system: system, raylet: pid, workers: ws, results: make(chan *atollpb.TaskResult, 1024)}
			e.owner = system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if r, ok := c.Message().(*atollpb.TaskResult); ok {
					e.results <- r
				}
			}))
			defer func() {
				_ = system.Root.StopFuture(pid).Wait()
				system.Shutdown()
			}()
			test(t, e)
		})
	}
}

// waitTimeout bounds every wait (a worker process starts in well under).
const waitTimeout = 20 * time.Second

func (e *env) recv(what string) *atollpb.TaskResult {
	e.t.Helper()
	select {
	case r := <-e.results:
		return r
	case <-time.After(waitTimeout):
		e.t.Fatalf("after %v: no %s", waitTimeout, what)
		return nil
	}
}

// noResult checks that no result is waiting.
func (e *env) noResult() {
	e.t.Helper()
	select {
	case r := <-e.results:
		e.t.Fatalf("unexpected result %s: %v", name(r.TaskId), r)
	default:
	}
}

// submit submits task name running function.
func (e *env) submit(fn, name string) []byte {
	id := []byte(fmt.Sprintf("%-16s", name)[:16])
	e.system.Root.RequestWithCustomSender(e.raylet, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{TaskId: id, Name: name, Function: fn,
		NumReturns: 1, Generator: fn == "block", Resources: map[string]float64{raylet.CPU: 1}}}, e.owner)
	return id
}

// block submits a block task and waits until it runs (its item).
func (e *env) block(name string) []byte {
	e.t.Helper()
	id := e.submit("block", name)
	if r := e.recv("the block task's item"); r.GetGeneratorItem() == nil {
		e.t.Fatalf("block task: %v, want its item", r)
	}
	return id
}

func value(r *atollpb.TaskResult) string {
	if len(r.GetReturns()) == 0 {
		return ""
	}
	return string(r.GetReturns()[0].GetValue().GetInline())
}

// createActor creates an actor of type typ and returns its host's
// address.
func (e *env) createActor(typ string, maxRestarts int32, spec *atollpb.ActorCreationSpec) (string, *atollpb.TaskResult) {
	e.t.Helper()
	if spec == nil {
		spec = &atollpb.ActorCreationSpec{}
	}
	spec.ActorType, spec.MaxRestarts = typ, maxRestarts
	id := ids.NewActorID()
	e.system.Root.RequestWithCustomSender(e.raylet, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(),
		Type: atollpb.TaskType_ACTOR_CREATION_TASK, ActorId: id.Bytes(), Name: typ, Function: typ, ActorCreation: spec}}, e.owner)
	r := e.recv("answer to the actor's creation")
	return r.GetActorAddress(), r
}

// call sends a method call straight to the actor's host, as a caller
// does, with the caller's id and sequence number.
func (e *env) call(address, method, name, caller string, seq uint64) {
	id := []byte(fmt.Sprintf("%-16s", name)[:16])
	e.system.Root.RequestWithCustomSender(e.system.NewLocalPID(address), &atollpb.PushTask{Spec: &atollpb.TaskSpec{TaskId: id, Name: name,
		Function: "A." + method, Type: atollpb.TaskType_ACTOR_TASK, NumReturns: 1, CallerId: []byte(caller), SequenceNumber: seq}}, e.owner)
}

// Tasks pushed and pipelined come back once each.
func TestProtocolTasks(t *testing.T) {
	overTransports(t, 4, func(t *testing.T, e *env) {
		const n = 40
		for i := range n {
			e.submit("echo", fmt.Sprintf("t%d", i))
		}
		seen := map[string]bool{}
		for range n {
			r := e.recv("task result")
			if r.Error != nil || value(r) != strings.TrimSpace(string(r.TaskId)) || seen[value(r)] {
				t.Fatalf("result %q (%v), seen before: %v", value(r), r.Error, seen[value(r)])
			}
			seen[value(r)] = true
		}
		e.noResult()
	})
}

// A running task's cancellation reaches its context, with the cause that
// says whether it was recursive.
func TestProtocolCancel(t *testing.T) {
	overTransports(t, 1, func(t *testing.T, e *env) {
		for _, nonRecursive := range []bool{false, true} {
			id := e.block(fmt.Sprintf("block-%v", nonRecursive))
			e.system.Root.Send(e.raylet, &atollpb.CancelTask{TaskId: id, NonRecursive: nonRecursive})
			r := e.recv("the cancelled task's result")
			if r.Error == nil {
				t.Fatalf("a cancelled task succeeded")
			}
			if got := strings.Contains(r.Error.GetMessage(), "without the tasks it submitted"); got != nonRecursive {
				t.Fatalf("non-recursive %v: the task's context ended with %q", nonRecursive, r.Error.GetMessage())
			}
		}
	})
}

// A generator's items reach its owner before its end; the owner's ack
// reaches the worker running it.
func TestProtocolGenerator(t *testing.T) {
	overTransports(t, 1, func(t *testing.T, e *env) {
		id := []byte("gen-task-000000a")
		e.system.Root.RequestWithCustomSender(e.raylet, &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{TaskId: id, Name: "g", Function: "gen",
			NumReturns: 1, Generator: true, Resources: map[string]float64{raylet.CPU: 1}}}, e.owner)
		for i := range 3 {
			r := e.recv("an item")
			if r.GetGeneratorItem().GetIndex() != int64(i) {
				t.Fatalf("item %d arrived as %v", i, r)
			}
		}
		e.noResult() // the producer waits for the ack
		e.system.Root.Send(e.raylet, &atollpb.GeneratorAck{TaskId: id, Consumed: 3})
		if r := e.recv("the generator's end"); r.GeneratorItem != nil || value(r) != "3" {
			t.Fatalf("end %v", r)
		}
	})
}

// A worker killed while its task runs: the task is reported crashed.
func TestProtocolWorkerKilled(t *testing.T) {
	overTransports(t, 1, func(t *testing.T, e *env) {
		id := e.block("doomed")
		e.system.Root.Send(e.raylet, &atollpb.KillWorker{TaskId: id, Reason: "test"})
		if r := e.recv("the killed task's result"); r.Error.GetCode() != atollpb.ErrorCode_WORKER_CRASHED {
			t.Fatalf("a killed worker's task: %v, want WORKER_CRASHED", r.Error)
		}
		// The pool is topped up: tasks run again.
		e.submit("echo", "after")
		if r := e.recv("a task after the kill"); value(r) != "after" {
			t.Fatalf("after the kill: %v", r)
		}
	})
}

// An actor's calls start in each caller's order whatever order they
// arrive in; a duplicate is dropped.
func TestProtocolActorOrder(t *testing.T) {
	overTransports(t, 4, func(t *testing.T, e *env) {
		addr, r := e.createActor("A", 0, nil)
		if r.Error != nil || addr == "" {
			t.Fatalf("creation: %v", r)
		}
		for _, seq := range []uint64{3, 1, 4, 2, 1} { // 1 twice
			e.call(addr, "record", fmt.Sprintf("c%d", seq), "caller", seq)
		}
		var last string
		for range 4 {
			last = value(e.recv("a call's result"))
		}
		if last != "c1,c2,c3,c4" {
			t.Fatalf("calls ran as %q, want c1,c2,c3,c4", last)
		}
		e.noResult()
	})
}

// A constructor that runs a task and waits for its result: the result
// comes back through the host while the constructor runs.
func TestProtocolConstructorCallsOut(t *testing.T) {
	overTransports(t, 1, func(t *testing.T, e *env) {
		start := time.Now()
		addr, r := e.createActor("callout", 0, nil)
		if r.Error != nil {
			t.Fatalf("creation: %v", r.Error)
		}
		if d := time.Since(start); d > waitTimeout/2 {
			t.Fatalf("the constructor took %v", d)
		}
		e.call(addr, "record", "m1", "caller", 1)
		if got := value(e.recv("a call's result")); got != "from-constructor,m1" {
			t.Fatalf("calls %q, want the constructor's task's result first", got)
		}
	})
}

// A failing constructor fails the actor's creation.
func TestProtocolConstructorFails(t *testing.T) {
	overTransports(t, 1, func(t *testing.T, e *env) {
		_, r := e.createActor("fail", 3, nil)
		if r.Error.GetCode() != atollpb.ErrorCode_ACTOR_DIED || !strings.Contains(r.Error.GetMessage(), "constructor failed on purpose") {
			t.Fatalf("creation of an actor whose constructor fails: %v", r.Error)
		}
	})
}

// A method that panics fails its call; the actor restarts (a new worker,
// the constructor again) and the calls behind the panic run there.
func TestProtocolActorRestart(t *testing.T) {
	overTransports(t, 4, func(t *testing.T, e *env) {
		addr, r := e.createActor("A", 1, nil)
		if r.Error != nil {
			t.Fatalf("creation: %v", r.Error)
		}
		e.call(addr, "record", "m1", "caller", 1)
		e.call(addr, "panic", "boom", "caller", 2)
		e.call(addr, "record", "m3", "caller", 3)
		got := map[string]*atollpb.TaskResult{}
		for range 3 {
			r := e.recv("a call's result")
			got[strings.TrimSpace(string(r.TaskId))] = r
		}
		if value(got["m1"]) != "m1" || !got["boom"].ActorCrashed || value(got["m3"]) != "m3" {
			t.Fatalf("m1 %q, boom crashed %v, m3 %q (want m3 alone: a fresh instance)", value(got["m1"]), got["boom"].ActorCrashed, value(got["m3"]))
		}
	})
}

// An answered call sends the raylet nothing: its timeline event waits in
// the host until the raylet tells its timeline, which then has every
// call.
func TestProtocolCallEventsWaitForTheRaylet(t *testing.T) {
	overTransports(t, 4, func(t *testing.T, e *env) {
		addr, r := e.createActor("A", 0, nil)
		if r.Error != nil {
			t.Fatalf("creation: %v", r.Error)
		}
		const calls = 20
		for i := 1; i <= calls; i++ {
			e.call(addr, "record", fmt.Sprintf("c%d", i), "caller", uint64(i))
			e.recv("a call's result")
		}
		waiting := func() int {
			e.workers.hosts.mu.RLock()
			defer e.workers.hosts.mu.RUnlock()
			n := 0
			for _, s := range e.workers.hosts.m {
				s.mu.Lock()
				n += s.events.Len()
				s.mu.Unlock()
			}
			return n
		}
		if n := waiting(); n != calls {
			t.Fatalf("%d events waiting in the host after %d calls, want all (none sent)", n, calls)
		}
		res, err := e.system.Root.RequestFuture(e.raylet, &raylet.GetTimeline{}, waitTimeout).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, ev := range res.([]raylet.TaskEvent) {
			if ev.Kind == raylet.EventActorCall {
				got++
			}
		}
		if got != calls || waiting() != 0 {
			t.Fatalf("timeline has %d calls, %d still waiting; want %d and 0", got, waiting(), calls)
		}
	})
}

// Tasks submitted straight to leased workers (a Submitter) show in the
// raylet's timeline when it is asked, though their results sent the
// raylet nothing: it takes their use from the submitter then.
func TestProtocolDirectTasksInTheTimeline(t *testing.T) {
	overTransports(t, 4, func(t *testing.T, e *env) {
		sub := raylet.NewSubmitter(raylet.SubmitterConfig{System: e.system, Raylet: e.raylet,
			Deliver: func(r *atollpb.TaskResult) { e.results <- r }})
		const tasks = 10
		for i := range tasks {
			id := ids.NewTaskID()
			spec := &atollpb.TaskSpec{TaskId: id.Bytes(), Type: atollpb.TaskType_NORMAL_TASK, Name: fmt.Sprintf("direct%d", i), Function: "echo", NumReturns: 1,
				Resources: map[string]float64{raylet.CPU: 1}}
			if !sub.Submit(spec) {
				t.Fatalf("task %d not leasable", i)
			}
			if r := e.recv("a direct task's result"); r.Error != nil {
				t.Fatalf("direct task: %v", r.Error)
			}
		}
		res, err := e.system.Root.RequestFuture(e.raylet, &raylet.GetTimeline{}, waitTimeout).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, ev := range res.([]raylet.TaskEvent) {
			if ev.Kind == raylet.EventTask && strings.HasPrefix(ev.Name, "direct") && !ev.Failed {
				got++
			}
		}
		if got != tasks {
			t.Fatalf("timeline has %d of the %d direct tasks", got, tasks)
		}
	})
}
