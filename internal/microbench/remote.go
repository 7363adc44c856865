package microbench

import (
	"context"
	"fmt"
	"sync"

	"github.com/atoll-runtime/atoll"
)

// The remote functions and actor types of the workloads. They are package
// variables so that every process of the binary (the driver and each
// worker process it re-executes) registers them at init.

// okBytes is what every no-op task and method returns, as Ray's small_value
// returns b"ok".
func okBytes() []byte { return []byte("ok") }

var (
	// smallValue is Ray's small_value task.
	smallValue = atoll.NewFunc0("microbench.small_value", func(context.Context) ([]byte, error) {
		return okBytes(), nil
	})

	// putSmall is one client of multi_client_put_calls: n puts of a small
	// value, each released at once (Ray's do_put_small).
	putSmall = atoll.NewFunc1("microbench.do_put_small", func(ctx context.Context, n int) (int, error) {
		for range n {
			ref, err := atoll.Put(ctx, 0)
			if err != nil {
				return 0, err
			}
			ref.Release()
		}
		return n, nil
	})

	// putLarge is one client of multi_client_put_gigabytes (Ray's do_put):
	// Puts puts of an array of Elems int64, each released at once.
	putLarge = atoll.NewFunc1("microbench.do_put", func(ctx context.Context, a putLargeArgs) (int, error) {
		xs := largeSource(a.Elems)
		for range a.Puts {
			ref, err := atoll.Put(ctx, xs)
			if err != nil {
				return 0, err
			}
			ref.Release()
		}
		return a.Puts, nil
	})

	// nnWork is one client task of n_n_actor_calls_async (Ray's work):
	// Calls calls spread round-robin over the named Actors.
	nnWork = atoll.NewFunc1("microbench.work", func(ctx context.Context, a nnWorkArgs) (int, error) {
		servers, err := lookupServers(ctx, a.Servers)
		if err != nil {
			return 0, err
		}
		refs := make([]atoll.ObjectRef[[]byte], a.Calls)
		for i := range refs {
			refs[i] = serverSmallValue.Remote(ctx, servers[i%len(servers)])
		}
		return a.Calls, getAndRelease(ctx, refs)
	})
)

type putLargeArgs struct {
	Puts  int // puts per task
	Elems int // int64 elements per array
}

type nnWorkArgs struct {
	Servers []string // names of the Actors
	Calls   int
}

// largeSourceCache holds this process's array for putLarge, written once,
// so that tasks measure puts and not the zeroing of fresh memory.
var largeSourceCache struct {
	sync.Mutex
	xs []int64
}

func largeSource(n int) []int64 {
	largeSourceCache.Lock()
	defer largeSourceCache.Unlock()
	if len(largeSourceCache.xs) != n {
		largeSourceCache.xs = filledInt64s(n)
	}
	return largeSourceCache.xs
}

// filledInt64s returns n int64s, every page written.
func filledInt64s(n int) []int64 {
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = int64(i)
	}
	return xs
}

// server is Ray's Actor (num_cpus=0): methods that return at once.
type server struct{}

var (
	serverType = atoll.NewActorType("microbench.Actor", func(context.Context) (*server, error) {
		return &server{}, nil
	})
	serverSmallValue = atoll.NewMethod0(serverType, "small_value", func(*server, context.Context) ([]byte, error) {
		return okBytes(), nil
	})
	serverSmallValueArg = atoll.NewMethod1(serverType, "small_value_arg", func(*server, context.Context, int) ([]byte, error) {
		return okBytes(), nil
	})
	// serverSmallValueBatch submits n small_value tasks and gets them
	// (one client of multi_client_tasks_async).
	serverSmallValueBatch = atoll.NewMethod1(serverType, "small_value_batch", func(_ *server, ctx context.Context, n int) (int, error) {
		refs := make([]atoll.ObjectRef[[]byte], n)
		for i := range refs {
			refs[i] = smallValue.Remote(ctx)
		}
		return n, getAndRelease(ctx, refs)
	})
)

// client is Ray's Client actor: it calls a fixed set of Actors, found by
// name on its first call. (Ray passes the handles to the constructor;
// atoll handles are not values, and a GetActor inside a constructor that
// runs in a worker process waits for the raylet, which waits for the
// constructor, until the call times out.)
type client struct {
	names   []string
	servers []atoll.ActorHandle[*server]
}

func (c *client) connect(ctx context.Context) error {
	if c.servers != nil {
		return nil
	}
	servers, err := lookupServers(ctx, c.names)
	if err != nil {
		return err
	}
	c.servers = servers
	return nil
}

var (
	clientType = atoll.NewActorType1("microbench.Client", func(_ context.Context, names []string) (*client, error) {
		if len(names) == 0 {
			return nil, fmt.Errorf("microbench: a Client needs Actors to call")
		}
		return &client{names: names}, nil
	})
	// clientBatch makes n calls to each of its Actors, then gets them all.
	clientBatch = atoll.NewMethod1(clientType, "small_value_batch", func(c *client, ctx context.Context, n int) (int, error) {
		if err := c.connect(ctx); err != nil {
			return 0, err
		}
		refs := make([]atoll.ObjectRef[[]byte], 0, n*len(c.servers))
		for _, s := range c.servers {
			for range n {
				refs = append(refs, serverSmallValue.Remote(ctx, s))
			}
		}
		return len(refs), getAndRelease(ctx, refs)
	})
	// clientBatchArg puts a small value once and passes its ref to n calls
	// to each of its Actors.
	clientBatchArg = atoll.NewMethod1(clientType, "small_value_batch_arg", func(c *client, ctx context.Context, n int) (int, error) {
		if err := c.connect(ctx); err != nil {
			return 0, err
		}
		x, err := atoll.Put(ctx, 0)
		if err != nil {
			return 0, err
		}
		defer x.Release()
		refs := make([]atoll.ObjectRef[[]byte], 0, n*len(c.servers))
		for _, s := range c.servers {
			for range n {
				refs = append(refs, serverSmallValueArg.Remote(ctx, s, x))
			}
		}
		return len(refs), getAndRelease(ctx, refs)
	})
)

func lookupServers(ctx context.Context, names []string) ([]atoll.ActorHandle[*server], error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("microbench: no Actor names")
	}
	servers := make([]atoll.ActorHandle[*server], len(names))
	for i, name := range names {
		h, err := atoll.GetActor[*server](ctx, name)
		if err != nil {
			return nil, fmt.Errorf("microbench: actor %q: %w", name, err)
		}
		servers[i] = h
	}
	return servers, nil
}

// getAndRelease waits for every ref, then releases them all (as Python
// drops Ray's refs when the list goes out of scope). It returns the first
// error.
func getAndRelease[T any](ctx context.Context, refs []atoll.ObjectRef[T]) error {
	var first error
	for _, r := range refs {
		if _, err := atoll.Get(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	release(refs)
	return first
}
