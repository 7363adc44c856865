package raylet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// The raylet's shell tests run real workers of the worker protocol
// (workerproto), in-process: each worker is a workerproto.Server on a
// goroutine of the test, over an in-memory pipe, with a test executor.

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// recv returns the next value from ch, failing the test with msg after
// waitTimeout.
func recv[T any](t testing.TB, ch <-chan T, msg string) T {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("after %v: %s", waitTimeout, msg)
		panic("unreachable")
	}
}

// blockingExecutor runs every task until release is closed; actors whose
// name is "broken" fail in their constructor.
type blockingExecutor struct{ release chan struct{} }

func (e *blockingExecutor) RunTask(ctx context.Context, spec *atollpb.TaskSpec) *atollpb.TaskResult {
	select {
	case <-e.release:
	case <-ctx.Done():
	}
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt}
}

func (e *blockingExecutor) NewActor(_ context.Context, spec *atollpb.TaskSpec) (any, error) {
	if spec.GetActorCreation().GetName() == "broken" {
		return nil, errors.New("constructor failed")
	}
	return struct{}{}, nil
}

func (e *blockingExecutor) RunActorTask(_ context.Context, _ any, spec *atollpb.TaskSpec) (*atollpb.TaskResult, bool) {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt}, false
}

// startRaylet spawns a raylet whose workers run exec in-process; cfg's
// Process and Workers are filled in, and PipelineDepth is 1 unless set
// (these tests count queued and running tasks).
func startRaylet(t *testing.T, cfg raylet.Config, exec workerproto.Executor) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	system := actors.NewSystem(nil)
	t.Cleanup(system.Shutdown)
	store := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})) // no worker here uses the store
	cfg.Process = &raylet.ProcessConfig{Store: store, InProcess: func(id ids.WorkerID, _ ids.NodeID, conn workerconn.Endpoint) error {
		var srv *workerproto.Server
		srv = workerproto.NewServer(conn, workerproto.ServerConfig{WorkerID: id, Executor: exec, Exit: func() { srv.Conn().Close() }})
		go srv.Serve(0)
		return nil
	}}
	cfg.Workers = workerproto.New()
	if cfg.PipelineDepth == 0 {
		cfg.PipelineDepth = 1
	}
	props, err := raylet.NewProps(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := system.Root.SpawnNamed(props, "raylet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	return system, pid
}

func state(t *testing.T, system *actor.ActorSystem, pid *actor.PID) *raylet.State {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, &raylet.GetState{}, waitTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	return res.(*raylet.State)
}
