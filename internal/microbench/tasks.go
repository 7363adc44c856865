package microbench

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

// Task metrics and their goroutine-and-channel baselines.

func tasksSync(context.Context, *env) (*workload, error) {
	return &workload{units: 1, roundTrips: true, op: func(ctx context.Context) error {
		ref := smallValue.Remote(ctx)
		_, err := atoll.Get(ctx, ref)
		ref.Release()
		return err
	}}, nil
}

func tasksSyncBase(_ context.Context, e *env) (*workload, error) {
	w := chanWorkload(e.cpus, 1, 1, 1)
	w.roundTrips = true
	return w, nil
}

func tasksAsync(_ context.Context, e *env) (*workload, error) {
	refs := make([]atoll.ObjectRef[[]byte], e.shapes.batch)
	return &workload{units: float64(len(refs)), op: func(ctx context.Context) error {
		for i := range refs {
			refs[i] = smallValue.Remote(ctx)
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

func tasksAsyncBase(_ context.Context, e *env) (*workload, error) {
	n := e.shapes.batch
	return chanWorkload(e.cpus, 1, n, float64(n)), nil
}

func multiTasksShape(e *env) map[string]any {
	return map[string]any{"clients": e.shapes.multiTaskClients, "client_kind": "actor", "tasks_per_client": e.shapes.multiTasksPerClient}
}

// multiTasks: each client Actor submits its tasks and gets them (Ray's
// Actor.small_value_batch).
func multiTasks(ctx context.Context, e *env) (*workload, error) {
	clients, _, err := e.newServers(ctx, e.shapes.multiTaskClients, false)
	if err != nil {
		return nil, err
	}
	n := e.shapes.multiTasksPerClient
	refs := make([]atoll.ObjectRef[int], len(clients))
	return &workload{units: float64(n * len(clients)), close: killAll(clients), op: func(ctx context.Context) error {
		for i, c := range clients {
			refs[i] = serverSmallValueBatch.Remote(ctx, c, atoll.Value(n))
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

func multiTasksBase(_ context.Context, e *env) (*workload, error) {
	s := e.shapes
	return chanWorkload(e.cpus, s.multiTaskClients, s.multiTasksPerClient, float64(s.multiTaskClients*s.multiTasksPerClient)), nil
}

// wait1k submits a batch, then waits for one ready ref at a time until
// all are (Ray's wait_multiple_refs).
func wait1k(_ context.Context, e *env) (*workload, error) {
	refs := make([]atoll.ObjectRef[[]byte], e.shapes.batch)
	pending := make([]atoll.Ref, len(refs))
	return &workload{units: 1, op: func(ctx context.Context) error {
		for i := range refs {
			refs[i] = smallValue.Remote(ctx)
			pending[i] = refs[i]
		}
		defer release(refs)
		notReady := pending
		for range len(refs) {
			var err error
			if _, notReady, err = atoll.Wait(ctx, notReady); err != nil {
				return err
			}
		}
		return nil
	}}, nil
}

func wait1kBase(_ context.Context, e *env) (*workload, error) {
	return chanWorkload(e.cpus, 1, e.shapes.batch, 1), nil
}

func release[T any](refs []atoll.ObjectRef[T]) {
	for _, r := range refs {
		r.Release()
	}
}
