package workerproto

import (
	"sync"
	"time"
)

// live is the set of a node's worker incarnations still running: started
// and not yet ended (a process not yet reaped, an in-process worker whose
// connection is open). An actor that stops stops its worker; the set is
// what the node checks after its actors stopped, so that no worker
// outlives its node even if an actor ended some other way.
type live struct {
	mu sync.Mutex
	m  map[*incarnation]struct{}
}

func newLive() *live { return &live{m: map[*incarnation]struct{}{}} }

func (l *live) add(p *incarnation) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.m[p] = struct{}{}
	l.mu.Unlock()
}

func (l *live) remove(p *incarnation) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.m, p)
	l.mu.Unlock()
}

// count is the number of incarnations still running.
func (l *live) count() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// reap kills every incarnation still running and waits, up to timeout in
// all, for each to end; it returns how many it killed.
func (l *live) reap(timeout time.Duration) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	ps := make([]*incarnation, 0, len(l.m))
	for p := range l.m {
		ps = append(ps, p)
	}
	l.mu.Unlock()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, p := range ps {
		p.kill()
		p.conn.Close()
		select {
		case <-p.gone():
		case <-deadline.C:
			return len(ps)
		}
	}
	return len(ps)
}
