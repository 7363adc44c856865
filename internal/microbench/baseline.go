package microbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// The baselines: the same work as each metric's op, done without a
// runtime (see the package doc).

// chanPool is the tasks' baseline: workers goroutines answer requests
// taken from one channel on the requester's reply channel.
type chanPool struct {
	reqs chan chan<- []byte
	wg   sync.WaitGroup
}

func newChanPool(workers int) *chanPool {
	p := &chanPool{reqs: make(chan chan<- []byte, 1024)}
	for range workers {
		p.wg.Go(func() {
			for reply := range p.reqs {
				reply <- okBytes()
			}
		})
	}
	return p
}

// roundTrips sends n requests, then waits for their n replies.
func (p *chanPool) roundTrips(reply chan []byte, n int) {
	for range n {
		p.reqs <- reply
	}
	for range n {
		<-reply
	}
}

func (p *chanPool) close(context.Context) error {
	close(p.reqs)
	p.wg.Wait()
	return nil
}

// chanWorkload makes one op clients goroutines (none when clients is 1:
// the caller is the client) each doing n round trips through a pool of
// workers goroutines.
func chanWorkload(workers, clients, n int, units float64) *workload {
	p := newChanPool(workers)
	replies := make([]chan []byte, clients)
	for i := range replies {
		replies[i] = make(chan []byte, n)
	}
	op := func(context.Context) error {
		p.roundTrips(replies[0], n)
		return nil
	}
	if clients > 1 {
		op = func(context.Context) error {
			var wg sync.WaitGroup
			for _, r := range replies {
				wg.Go(func() { p.roundTrips(r, n) })
			}
			wg.Wait()
			return nil
		}
	}
	return &workload{op: op, units: units, close: p.close}
}

// echo is the actor calls' baseline: protoactor-go actors that answer
// every ping with a pong, asked with RequestFuture.
type echo struct {
	root *actor.RootContext
	pids []*actor.PID
}

type ping struct{ arg int }

type pong struct{ data []byte }

// requestTimeout bounds one baseline request; only a broken actor system
// reaches it.
const requestTimeout = time.Minute

// echoSeq names echo actors uniquely.
var echoSeq atomic.Int64

func newEcho(sys *actor.ActorSystem, actors int) (*echo, error) {
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*ping); ok {
			c.Respond(&pong{data: okBytes()})
		}
	})
	e := &echo{root: sys.Root}
	for range actors {
		pid, err := sys.Root.SpawnNamed(props, fmt.Sprintf("microbench-echo-%d", echoSeq.Add(1)))
		if err != nil {
			_ = e.close(context.Background())
			return nil, fmt.Errorf("microbench: spawn echo actor: %w", err)
		}
		e.pids = append(e.pids, pid)
	}
	return e, nil
}

func (e *echo) request(pid *actor.PID, arg int) actor.Future {
	return e.root.RequestFuture(pid, &ping{arg: arg}, requestTimeout)
}

// await waits for every future; it returns the first error.
func await(fs []actor.Future) error {
	var first error
	for _, f := range fs {
		if _, err := f.Result(); err != nil && first == nil {
			first = fmt.Errorf("microbench: echo request: %w", err)
		}
	}
	return first
}

func (e *echo) close(context.Context) error {
	for _, pid := range e.pids {
		_ = e.root.StopFuture(pid).Wait()
	}
	return nil
}

// objectTable is the put and get calls' baseline: objects in a map from
// id to entry guarded by a mutex, with reference counts.
type objectTable struct {
	mu   sync.Mutex
	m    map[uint64]*tableEntry
	next uint64
}

type tableEntry struct {
	value     []byte
	refs      int
	contained []uint64
}

func newObjectTable() *objectTable { return &objectTable{m: map[uint64]*tableEntry{}} }

// put inserts a value and returns its id.
func (t *objectTable) put(value []byte, contained []uint64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.m[t.next] = &tableEntry{value: value, refs: 1, contained: contained}
	return t.next
}

// get looks a value up.
func (t *objectTable) get(id uint64) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok {
		return nil, false
	}
	return e.value, true
}

// release drops a reference, deleting the entry at zero.
func (t *objectTable) release(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[id]; ok {
		if e.refs--; e.refs <= 0 {
			delete(t.m, id)
		}
	}
}

// borrowContained looks a container up and takes a reference to each id
// it holds, one locked increment per id (as decoding each ref does).
func (t *objectTable) borrowContained(id uint64) ([]*tableEntry, error) {
	t.mu.Lock()
	c, ok := t.m[id]
	t.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("microbench: baseline object %d missing", id)
	}
	out := make([]*tableEntry, len(c.contained))
	for i, cid := range c.contained {
		t.mu.Lock()
		e := t.m[cid]
		if e != nil {
			e.refs++
		}
		t.mu.Unlock()
		if e == nil {
			return nil, fmt.Errorf("microbench: baseline object %d missing", cid)
		}
		out[i] = e
	}
	return out, nil
}

// putRelease is one baseline put: insert, then the delete of its release.
func (t *objectTable) putRelease() {
	t.release(t.put([]byte{0}, nil))
}

// copyPool is multi_client_put_gigabytes' baseline: workers goroutines,
// each with its own source and touched destination of elems int64s, copy
// puts times per client job.
type copyPool struct {
	srcs, dsts [][]int64
}

func newCopyPool(workers, elems int) *copyPool {
	p := &copyPool{}
	for range workers {
		p.srcs = append(p.srcs, filledInt64s(elems))
		p.dsts = append(p.dsts, filledInt64s(elems))
	}
	return p
}

func (p *copyPool) run(clients, puts int) {
	jobs := make(chan struct{}, clients)
	for range clients {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for i := range p.srcs {
		wg.Go(func() {
			for range jobs {
				for range puts {
					copy(p.dsts[i], p.srcs[i])
				}
			}
		})
	}
	wg.Wait()
}
