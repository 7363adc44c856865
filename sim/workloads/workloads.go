// Package workloads holds the simulator's stock workloads (package sim):
// Mixed, the cluster workload `atoll sim` and `make sim` run (objects
// that spill, tasks reading them, a task borrowing refs inside its
// argument, nested tasks, an actor's ordered calls, in rounds), Streams
// (streaming generators read whole, dropped and cancelled), Groups
// (placement groups reserved, used and removed), and KV, a
// replicated-state workload whose history is checked for
// linearizability. They are written against the public SDK, as a user's
// workload is; ByName finds one.
package workloads

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/sim"
)

// Workload is a named workload with its checkers.
type Workload = sim.Named

// ByName returns the stock workload called name.
func ByName(name string) (Workload, bool) {
	for _, w := range All() {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// All lists the stock workloads, mixed first.
func All() []Workload {
	return []Workload{
		{Name: "mixed", Run: func(ctx context.Context) error { return Mixed(ctx, 10) }, Released: true},
		{Name: "streams", Run: func(ctx context.Context) error { return Streams(ctx, 6) }, Released: true},
		{Name: "groups", Run: func(ctx context.Context) error { return Groups(ctx, 6) }, Released: true},
		{Name: "kv", Run: func(ctx context.Context) error { return KV(ctx, 4, 12) }, Checkers: []sim.Checker{sim.Linearizable("kv-linearizable", KVModel)}},
	}
}

var (
	makeChunk = atoll.NewFunc2("sim.workloads.makeChunk", func(ctx context.Context, seed, n int) ([]float64, error) {
		// Work that takes a while (simulated time): faults find tasks
		// in flight.
		if err := sim.Sleep(ctx, time.Duration(100+50*(seed%5))*time.Millisecond); err != nil {
			return nil, err
		}
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64((seed*7919 + i) % 1000)
		}
		return xs, nil
	})
	chunkSum = atoll.NewFunc1("sim.workloads.chunkSum", func(ctx context.Context, xs []float64) (float64, error) {
		if err := sim.Sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	sumRefs = atoll.NewFunc1("sim.workloads.sumRefs", func(ctx context.Context, refs []atoll.ObjectRef[[]float64]) (float64, error) {
		s := 0.0
		for _, r := range refs {
			xs, err := atoll.Get(ctx, r)
			if err != nil {
				return 0, err
			}
			for _, x := range xs {
				s += x
			}
		}
		return s, nil
	})
	blobSum = atoll.NewFunc1("sim.workloads.blobSum", func(_ context.Context, b []byte) (int, error) {
		s := 0
		for _, x := range b {
			s += int(x)
		}
		return s, nil
	})
	tree *atoll.Func1[int, int]
)

func init() {
	tree = atoll.NewFunc1("sim.workloads.tree", func(ctx context.Context, depth int) (int, error) {
		if depth == 0 {
			return 1, sim.Sleep(ctx, 30*time.Millisecond)
		}
		a := tree.Remote(ctx, atoll.Value(depth-1), atoll.MaxRetries(3))
		b := tree.Remote(ctx, atoll.Value(depth-1), atoll.MaxRetries(3))
		x, err := atoll.Get(ctx, a)
		if err != nil {
			return 0, err
		}
		y, err := atoll.Get(ctx, b)
		if err != nil {
			return 0, err
		}
		return x + y + 1, nil
	})
}

type logActor struct{ log []int }

var (
	logType = atoll.NewActorType("sim.workloads.Log", func(context.Context) (*logActor, error) { return &logActor{}, nil })
	logAdd  = atoll.NewMethod1(logType, "Add", func(a *logActor, ctx context.Context, i int) ([]int, error) {
		if err := sim.Sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
		a.log = append(a.log, i)
		return append([]int(nil), a.log...), nil
	})
)

// typedErrors returns a workload's note: a typed error (a fault may cause
// one) is kept in *first if it is the first and does not fail the run
// (nil); any other error is returned, and fails it.
func typedErrors(first *error) func(error) error {
	return func(err error) error {
		if !sim.Typed(err) {
			return err
		}
		if *first == nil {
			*first = err
		}
		return nil
	}
}

// inRounds runs round 0 to rounds-1 half a second apart (simulated), each
// given the note of typedErrors: a wrong result a round returns ends the
// run; the first typed error noted is returned once every round ran.
func inRounds(ctx context.Context, rounds int, round func(ctx context.Context, round int, note func(error) error) error) error {
	var firstErr error
	note := typedErrors(&firstErr)
	for r := 0; r < rounds; r++ {
		if err := round(ctx, r, note); err != nil {
			return err
		}
		if err := sim.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return firstErr
}

// blobWant is the sum of the bytes of round's blob.
func blobWant(round int) int {
	s := 0
	for i := 0; i < blobBytes; i++ {
		s += int(byte(round + i))
	}
	return s
}

// keeper is an actor that keeps a ref it was passed (it borrows it past
// the call that brought it) and reads it later.
type keeper struct{ kept []atoll.ObjectRef[[]float64] }

var (
	keeperType = atoll.NewActorType("sim.workloads.Keeper", func(context.Context) (*keeper, error) { return &keeper{}, nil })
	keep       = atoll.NewMethod1(keeperType, "Keep", func(k *keeper, _ context.Context, refs []atoll.ObjectRef[[]float64]) (int, error) {
		k.kept = append(k.kept, refs...)
		return len(k.kept), nil
	})
	keptSum = atoll.NewMethod0(keeperType, "Sum", func(k *keeper, ctx context.Context) (float64, error) {
		s := 0.0
		for _, r := range k.kept {
			xs, err := atoll.Get(ctx, r)
			if err != nil {
				return 0, err
			}
			for _, x := range xs {
				s += x
			}
		}
		return s, nil
	})
)

func expectedSum(seed, n int) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		s += float64((seed*7919 + i) % 1000)
	}
	return s
}

// Sizes, for the simulator's default 1 MiB stores: the blobs the driver
// keeps make its node's store spill.
const blobBytes = 384 << 10

// Mixed runs rounds of a mixed workload half a second or more apart: a
// 384 KiB put kept for three rounds (the driver's 1 MiB store spills), chunks made by
// tasks and summed by others, a task that reads refs passed inside its
// argument (it borrows them), a tree of nested tasks, an actor taking
// twelve ordered calls. A wrong value fails it; a typed error (a fault
// may cause one) does not, and the first is returned once every round
// ran.
func Mixed(ctx context.Context, rounds int) error {
	var firstErr error
	note := typedErrors(&firstErr)
	var kept []atoll.ObjectRef[[]byte]
	defer func() {
		for _, r := range kept {
			r.Release()
		}
	}()
	for round := 0; round < rounds; round++ {
		blob := make([]byte, blobBytes)
		for i := range blob {
			blob[i] = byte(round + i)
		}
		big, err := atoll.Put(ctx, blob)
		if err != nil {
			if err := note(err); err != nil {
				return err
			}
		} else {
			kept = append(kept, big)
			if len(kept) > 3 {
				kept[0].Release()
				kept = kept[1:]
			}
		}
		if err := mixedRound(ctx, round, note); err != nil {
			return err
		}
		// A task reads the oldest blob kept: wherever it runs, it pulls
		// a copy, which lives on until the AMM drops it (ReduceReplicas).
		if len(kept) > 0 {
			br := blobSum.Remote(ctx, kept[0], atoll.MaxRetries(3))
			s, err := atoll.Get(ctx, br)
			br.Release()
			if err != nil {
				if err := note(err); err != nil {
					return err
				}
			} else if want := blobWant(round - len(kept) + 1); s != want {
				return fmt.Errorf("round %d: blobSum = %d, want %d", round, s, want)
			}
		}
		if err := sim.Sleep(ctx, time.Duration(500+round*100)*time.Millisecond); err != nil {
			return err
		}
	}
	return firstErr
}

func mixedRound(ctx context.Context, round int, note func(error) error) error {
	const chunks, n = 8, 8 << 10 // 64 KiB each
	refs := make([]atoll.ObjectRef[[]float64], chunks)
	for i := range refs {
		refs[i] = makeChunk.Remote(ctx, atoll.Value(round*100+i), atoll.Value(n), atoll.MaxRetries(3))
	}
	defer func() {
		for _, r := range refs {
			r.Release()
		}
	}()
	sums := make([]atoll.ObjectRef[float64], chunks)
	for i := range refs {
		sums[i] = chunkSum.Remote(ctx, refs[i], atoll.MaxRetries(3))
	}
	for i, r := range sums {
		v, err := atoll.Get(ctx, r)
		r.Release()
		if err != nil {
			if err := note(err); err != nil {
				return err
			}
			continue
		}
		if want := expectedSum(round*100+i, n); v != want {
			return fmt.Errorf("round %d: chunkSum %d = %v, want %v", round, i, v, want)
		}
	}
	sr := sumRefs.Remote(ctx, atoll.Value(refs[:3]), atoll.MaxRetries(3))
	b, err := atoll.Get(ctx, sr)
	sr.Release()
	if err != nil {
		if err := note(err); err != nil {
			return err
		}
	} else if want := expectedSum(round*100, n) + expectedSum(round*100+1, n) + expectedSum(round*100+2, n); b != want {
		return fmt.Errorf("round %d: sumRefs = %v, want %v", round, b, want)
	}
	// An actor keeps one of the chunks: the driver drops its own ref, the
	// actor's borrow keeps the object, which it reads again; its death
	// (Kill) ends the borrow and the object goes.
	if err := keepAndRead(ctx, round, refs[3], n, note); err != nil {
		return err
	}
	tr := tree.Remote(ctx, atoll.Value(3), atoll.MaxRetries(3))
	t, err := atoll.Get(ctx, tr)
	tr.Release()
	if err != nil {
		if err := note(err); err != nil {
			return err
		}
	} else if t != 15 {
		return fmt.Errorf("round %d: tree(3) = %d, want 15", round, t)
	}
	if err := cancelTree(ctx, round, note); err != nil {
		return err
	}
	h, err := logType.New(ctx, atoll.MaxRestarts(2), atoll.MaxTaskRetries(2))
	if err != nil {
		return note(err)
	}
	defer func() { _ = atoll.Kill(ctx, h) }()
	calls := make([]atoll.ObjectRef[[]int], 12)
	for i := range calls {
		calls[i] = logAdd.Remote(ctx, h, atoll.Value(i))
	}
	for i, c := range calls {
		l, err := atoll.Get(ctx, c)
		c.Release()
		if err != nil {
			if err := note(err); err != nil {
				return err
			}
			continue
		}
		// The actor's log (since its last restart) ends with this call and
		// holds each call once; a call retried after a crash runs after
		// the calls queued before its retry (the simulator checks the
		// order of the attempts).
		if len(l) == 0 || l[len(l)-1] != i {
			return fmt.Errorf("round %d: call %d saw log %v", round, i, l)
		}
		seen := map[int]bool{}
		for _, x := range l {
			if seen[x] {
				return fmt.Errorf("round %d: call %d saw log with %d twice: %v", round, i, x, l)
			}
			seen[x] = true
		}
	}
	return nil
}

// cancelTree cancels a tree of nested tasks at a point of its run that
// moves with the round: queued, running, its children running, or done.
// It ends with its value or cancelled (errors.Is ErrCancelled), and
// nothing it made may be left behind (the simulator's checks at the end).
func cancelTree(ctx context.Context, round int, note func(error) error) error {
	ct := tree.Remote(ctx, atoll.Value(2), atoll.MaxRetries(3))
	defer ct.Release()
	if err := sim.Sleep(ctx, time.Duration(round%5)*25*time.Millisecond); err != nil {
		return err
	}
	if err := atoll.Cancel(ctx, ct); err != nil {
		return fmt.Errorf("round %d: Cancel: %w", round, err)
	}
	v, err := atoll.Get(ctx, ct)
	switch {
	case errors.Is(err, atoll.ErrCancelled):
		return nil
	case err != nil:
		return note(err)
	case v != 7:
		return fmt.Errorf("round %d: cancelled tree(2) = %d, want 7", round, v)
	}
	return nil
}

// keepAndRead has a keeper actor borrow ref (chunk round*100+3), then
// releases the driver's own handle and has the actor read it again.
func keepAndRead(ctx context.Context, round int, ref atoll.ObjectRef[[]float64], n int, note func(error) error) error {
	k, err := keeperType.New(ctx, atoll.MaxRestarts(0))
	if err != nil {
		return note(err)
	}
	defer func() { _ = atoll.Kill(ctx, k) }()
	kr := keep.Remote(ctx, k, atoll.Value([]atoll.ObjectRef[[]float64]{ref}))
	_, err = atoll.Get(ctx, kr)
	kr.Release()
	ref.Release()
	if err != nil {
		return note(err)
	}
	sr := keptSum.Remote(ctx, k)
	s, err := atoll.Get(ctx, sr)
	sr.Release()
	if err != nil {
		return note(err)
	}
	if want := expectedSum(round*100+3, n); s != want {
		return fmt.Errorf("round %d: the keeper read %v, want %v", round, s, want)
	}
	return nil
}

// The KV workload: an actor holds a map; clients (tasks, and the driver)
// put and get keys; each operation is recorded in the run's history and
// the history is checked for linearizability against KVModel.

type kvActor struct{ m map[string]int }

// KVOp is one operation of the KV workload.
type KVOp struct {
	Put   bool
	Key   string
	Value int
}

var (
	kvType = atoll.NewActorType("sim.workloads.KV", func(context.Context) (*kvActor, error) { return &kvActor{m: map[string]int{}}, nil })
	kvPut  = atoll.NewMethod2(kvType, "Put", func(a *kvActor, _ context.Context, k string, v int) (int, error) {
		a.m[k] = v
		return v, nil
	})
	kvGet = atoll.NewMethod1(kvType, "Get", func(a *kvActor, _ context.Context, k string) (int, error) { return a.m[k], nil })
	// kvClient runs ops operations of client on the actor from a task.
	kvClient = atoll.NewFunc3("sim.workloads.kvClient", func(ctx context.Context, h atoll.ActorHandle[*kvActor], client, ops int) (int, error) {
		return kvOps(ctx, h, client, ops), nil
	})
)

// kvOps runs ops operations and records them; it returns how many
// completed.
func kvOps(ctx context.Context, h atoll.ActorHandle[*kvActor], client, ops int) int {
	hist := sim.HistoryOf(ctx)
	done := 0
	for i := 0; i < ops; i++ {
		key := fmt.Sprintf("k%d", (client+i)%3)
		var op *sim.Op
		var ref atoll.ObjectRef[int]
		if i%2 == 0 {
			in := KVOp{Put: true, Key: key, Value: client*1000 + i}
			op = hist.Call(client, in)
			ref = kvPut.Remote(ctx, h, atoll.Value(in.Key), atoll.Value(in.Value))
		} else {
			op = hist.Call(client, KVOp{Key: key})
			ref = kvGet.Remote(ctx, h, atoll.Value(key))
		}
		v, err := atoll.Get(ctx, ref)
		ref.Release()
		if err != nil {
			op.Unknown()
			continue
		}
		op.Return(v)
		done++
		_ = sim.Sleep(ctx, 20*time.Millisecond)
	}
	return done
}

// KV runs clients concurrent clients (tasks) of ops operations each on
// one KV actor (no restarts: a crashed actor loses its map, which no
// sequential model allows), plus the driver's own operations.
func KV(ctx context.Context, clients, ops int) error {
	h, err := kvType.New(ctx, atoll.MaxRestarts(0))
	if err != nil {
		return err
	}
	defer func() { _ = atoll.Kill(ctx, h) }()
	refs := make([]atoll.ObjectRef[int], clients)
	for c := range refs {
		refs[c] = kvClient.Remote(ctx, atoll.Value(h), atoll.Value(c+1), atoll.Value(ops))
	}
	kvOps(ctx, h, 0, ops)
	for _, r := range refs {
		if _, err := atoll.Get(ctx, r); err != nil && !sim.Typed(err) {
			return err
		}
		r.Release()
	}
	return nil
}

// KVModel is the sequential specification of the KV actor.
var KVModel = sim.Model{
	Init: func() any { return map[string]int{} },
	Apply: func(state, input any) (any, any) {
		m := state.(map[string]int)
		op := input.(KVOp)
		if !op.Put {
			return m, m[op.Key]
		}
		next := maps.Clone(m)
		next[op.Key] = op.Value
		return next, op.Value
	},
	Key: func(input any) string { return input.(KVOp).Key },
	Describe: func(input, output any) string {
		op := input.(KVOp)
		if op.Put {
			return fmt.Sprintf("put(%s, %d)", op.Key, op.Value)
		}
		return fmt.Sprintf("get(%s) = %v", op.Key, output)
	},
}
