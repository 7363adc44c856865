package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// poolIdle is how long a dispatcher goroutine waits for more work before
// it exits.
const poolIdle = 2 * time.Second

// pooledDispatcher runs mailbox passes on goroutines it keeps for reuse:
// a pass is handed to a parked goroutine if one waits, else to a new one.
// Scheduling never blocks, so an actor that blocks cannot starve others.
// A reused goroutine keeps the stack it grew, which a fresh goroutine per
// pass (protoactor's default dispatcher) has to grow again, pass after
// pass, on the deep call paths of the hot actors.
type pooledDispatcher struct {
	throughput int
	handoff    chan func()  // unbuffered: a send succeeds only if a goroutine waits
	started    atomic.Int64 // goroutines started
	parked     atomic.Int64 // goroutines waiting for a pass
}

// NewPooledDispatcher returns a dispatcher that reuses goroutines between
// mailbox passes, processing up to throughput messages per pass.
func NewPooledDispatcher(throughput int) actor.Dispatcher {
	return &pooledDispatcher{throughput: throughput, handoff: make(chan func())}
}

// HotDispatcher is the pooled dispatcher the runtime's busiest actors use:
// the raylet, its workers and actor hosts, the owner and the object store.
var HotDispatcher = NewPooledDispatcher(300)

func (d *pooledDispatcher) Schedule(fn func()) {
	select {
	case d.handoff <- fn:
	default:
		d.started.Add(1)
		go d.run(fn)
	}
}

func (d *pooledDispatcher) Throughput() int { return d.throughput }

func (d *pooledDispatcher) run(fn func()) {
	idle := time.NewTimer(poolIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(poolIdle)
		d.parked.Add(1)
		select {
		case fn = <-d.handoff:
			d.parked.Add(-1)
		case <-idle.C:
			d.parked.Add(-1)
			return
		}
	}
}
