package microbench

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll"
)

// Actor-call metrics and their protoactor baselines.

// newServers creates n Actors (named when named is set, so that clients
// can find them) and waits until each answers a call.
func (e *env) newServers(ctx context.Context, n int, named bool) ([]atoll.ActorHandle[*server], []string, error) {
	var hs []atoll.ActorHandle[*server]
	var names []string
	for range n {
		var opts []atoll.ActorOption
		if named {
			name := e.actorName("Actor")
			names = append(names, name)
			opts = append(opts, atoll.ActorName(name))
		}
		h, err := serverType.New(ctx, opts...)
		if err != nil {
			_ = killAll(hs)(ctx)
			return nil, nil, err
		}
		hs = append(hs, h)
	}
	for _, h := range hs {
		ref := serverSmallValue.Remote(ctx, h)
		_, err := atoll.Get(ctx, ref)
		ref.Release()
		if err != nil {
			_ = killAll(hs)(ctx)
			return nil, nil, err
		}
	}
	return hs, names, nil
}

// newClient creates a Client of the named Actors and waits until it runs.
func newClient(ctx context.Context, servers []string) (atoll.ActorHandle[*client], error) {
	c, err := clientType.New(ctx, atoll.Value(servers))
	if err != nil {
		return c, err
	}
	ref := clientBatch.Remote(ctx, c, atoll.Value(0))
	_, err = atoll.Get(ctx, ref)
	ref.Release()
	if err != nil {
		_ = atoll.Kill(ctx, c)
	}
	return c, err
}

// killAll returns a function that kills every actor of hs.
func killAll[T any](hs []atoll.ActorHandle[T]) func(context.Context) error {
	return func(ctx context.Context) error {
		var errList []error
		for _, h := range hs {
			errList = append(errList, atoll.Kill(ctx, h))
		}
		return errors.Join(errList...)
	}
}

func actorSync(ctx context.Context, e *env) (*workload, error) {
	hs, _, err := e.newServers(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	a := hs[0]
	return &workload{units: 1, roundTrips: true, close: killAll(hs), op: func(ctx context.Context) error {
		ref := serverSmallValue.Remote(ctx, a)
		_, err := atoll.Get(ctx, ref)
		ref.Release()
		return err
	}}, nil
}

func actorSyncBase(_ context.Context, e *env) (*workload, error) {
	ec, err := newEcho(e.actorSystem(), 1)
	if err != nil {
		return nil, err
	}
	return &workload{units: 1, roundTrips: true, close: ec.close, op: func(context.Context) error {
		return await([]actor.Future{ec.request(ec.pids[0], 0)})
	}}, nil
}

func actorAsync(ctx context.Context, e *env) (*workload, error) {
	hs, _, err := e.newServers(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	a := hs[0]
	refs := make([]atoll.ObjectRef[[]byte], e.shapes.batch)
	return &workload{units: float64(len(refs)), close: killAll(hs), op: func(ctx context.Context) error {
		for i := range refs {
			refs[i] = serverSmallValue.Remote(ctx, a)
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

func actorAsyncBase(_ context.Context, e *env) (*workload, error) {
	ec, err := newEcho(e.actorSystem(), 1)
	if err != nil {
		return nil, err
	}
	fs := make([]actor.Future, e.shapes.batch)
	return &workload{units: float64(len(fs)), close: ec.close, op: func(context.Context) error {
		for i := range fs {
			fs[i] = ec.request(ec.pids[0], 0)
		}
		return await(fs)
	}}, nil
}

func concurrentShape(e *env) map[string]any {
	return map[string]any{"batch": e.shapes.batch, "caller_goroutines": e.shapes.concurrency}
}

// shareCalls runs n synchronous calls of call spread over goroutines
// goroutines, each taking the next call when its last one returned. It
// returns the first error.
func shareCalls(goroutines, n int, call func() error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := call(); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// actorConcurrent: atoll actors run one call at a time (no threaded
// actors), so the concurrency of Ray's max_concurrency=16 actor is on the
// caller's side: 16 goroutines, one synchronous call each at a time.
func actorConcurrent(ctx context.Context, e *env) (*workload, error) {
	hs, _, err := e.newServers(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	a := hs[0]
	n := e.shapes.batch
	return &workload{units: float64(n), close: killAll(hs), op: func(ctx context.Context) error {
		return shareCalls(e.shapes.concurrency, n, func() error {
			ref := serverSmallValue.Remote(ctx, a)
			_, err := atoll.Get(ctx, ref)
			ref.Release()
			return err
		})
	}}, nil
}

func actorConcurrentBase(_ context.Context, e *env) (*workload, error) {
	ec, err := newEcho(e.actorSystem(), 1)
	if err != nil {
		return nil, err
	}
	n := e.shapes.batch
	return &workload{units: float64(n), close: ec.close, op: func(context.Context) error {
		return shareCalls(e.shapes.concurrency, n, func() error {
			return await([]actor.Future{ec.request(ec.pids[0], 0)})
		})
	}}, nil
}

func oneNShape(e *env) map[string]any {
	return map[string]any{"actors": e.servers(), "calls_per_actor": e.shapes.oneNCalls, "clients": 1, "client_kind": "actor"}
}

// oneN: one Client actor calls each Actor oneNCalls times, then gets them
// all.
func oneN(ctx context.Context, e *env) (*workload, error) {
	hs, names, err := e.newServers(ctx, e.servers(), true)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ctx, names)
	if err != nil {
		_ = killAll(hs)(ctx)
		return nil, err
	}
	n := e.shapes.oneNCalls
	kill := func(ctx context.Context) error {
		return errors.Join(atoll.Kill(ctx, c), killAll(hs)(ctx))
	}
	return &workload{units: float64(n * len(hs)), close: kill, op: func(ctx context.Context) error {
		ref := clientBatch.Remote(ctx, c, atoll.Value(n))
		_, err := atoll.Get(ctx, ref)
		ref.Release()
		return err
	}}, nil
}

func oneNBase(_ context.Context, e *env) (*workload, error) {
	ec, err := newEcho(e.actorSystem(), e.servers())
	if err != nil {
		return nil, err
	}
	n := e.shapes.oneNCalls
	fs := make([]actor.Future, 0, n*len(ec.pids))
	return &workload{units: float64(n * len(ec.pids)), close: ec.close, op: func(context.Context) error {
		fs = fs[:0]
		for _, pid := range ec.pids {
			for range n {
				fs = append(fs, ec.request(pid, 0))
			}
		}
		return await(fs)
	}}, nil
}

func nnShape(e *env) map[string]any {
	return map[string]any{"actors": e.servers(), "clients": e.shapes.nnClients, "client_kind": "task", "calls_per_client": e.shapes.nnCalls}
}

// nn: nnClients tasks each call the Actors round-robin, then get their
// calls (Ray's work tasks).
func nn(ctx context.Context, e *env) (*workload, error) {
	hs, names, err := e.newServers(ctx, e.servers(), true)
	if err != nil {
		return nil, err
	}
	s := e.shapes
	refs := make([]atoll.ObjectRef[int], s.nnClients)
	args := nnWorkArgs{Servers: names, Calls: s.nnCalls}
	return &workload{units: float64(s.nnClients * s.nnCalls), close: killAll(hs), op: func(ctx context.Context) error {
		for i := range refs {
			refs[i] = nnWork.Remote(ctx, atoll.Value(args))
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

func nnBase(_ context.Context, e *env) (*workload, error) {
	ec, err := newEcho(e.actorSystem(), e.servers())
	if err != nil {
		return nil, err
	}
	s := e.shapes
	return &workload{units: float64(s.nnClients * s.nnCalls), close: ec.close, op: func(context.Context) error {
		return clientsRequest(s.nnClients, func(int) error {
			fs := make([]actor.Future, s.nnCalls)
			for i := range fs {
				fs[i] = ec.request(ec.pids[i%len(ec.pids)], 0)
			}
			return await(fs)
		})
	}}, nil
}

// clientsRequest runs client(i) on n goroutines at once and returns the
// first error.
func clientsRequest(n int, client func(i int) error) error {
	errList := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errList[i] = client(i) })
	}
	wg.Wait()
	return errors.Join(errList...)
}

func nnArgShape(e *env) map[string]any {
	return map[string]any{"actors": e.servers(), "clients": e.servers(), "client_kind": "actor", "calls_per_client": e.shapes.nnArgCalls, "arg": "ref to Put(0)"}
}

// nnArg: one Client per Actor puts a small value and passes its ref to
// nnArgCalls calls (Ray's small_value_batch_arg).
func nnArg(ctx context.Context, e *env) (*workload, error) {
	hs, names, err := e.newServers(ctx, e.servers(), true)
	if err != nil {
		return nil, err
	}
	var clients []atoll.ActorHandle[*client]
	kill := func(ctx context.Context) error { return errors.Join(killAll(clients)(ctx), killAll(hs)(ctx)) }
	for _, name := range names {
		c, err := newClient(ctx, []string{name})
		if err != nil {
			_ = kill(ctx)
			return nil, err
		}
		clients = append(clients, c)
	}
	n := e.shapes.nnArgCalls
	refs := make([]atoll.ObjectRef[int], len(clients))
	return &workload{units: float64(n * len(clients)), close: kill, op: func(ctx context.Context) error {
		for i, c := range clients {
			refs[i] = clientBatchArg.Remote(ctx, c, atoll.Value(n))
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

func nnArgBase(_ context.Context, e *env) (*workload, error) {
	ec, err := newEcho(e.actorSystem(), e.servers())
	if err != nil {
		return nil, err
	}
	n := e.shapes.nnArgCalls
	return &workload{units: float64(n * len(ec.pids)), close: ec.close, op: func(context.Context) error {
		return clientsRequest(len(ec.pids), func(i int) error {
			fs := make([]actor.Future, n)
			for j := range fs {
				fs[j] = ec.request(ec.pids[i], j)
			}
			return await(fs)
		})
	}}, nil
}
