package remote

import (
	"context"
	"sync"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// PullerConfig configures a Puller.
type PullerConfig struct {
	// MaxInFlight bounds the bytes being received at once (the sum of the
	// sizes of admitted, unfinished transfers): a node only pulls what
	// fits. A pull that would exceed it waits, in arrival order, after
	// learning the object's size and before alloc. An object larger than
	// MaxInFlight is admitted alone when nothing else is in flight.
	// Required (> 0).
	MaxInFlight uint64
}

// PullerStats counts a Puller's work.
type PullerStats struct {
	Transfers uint64 // transfers started (one per distinct in-flight id)
	Joined    uint64 // Pull calls that joined a transfer already in flight
	InFlight  uint64 // bytes admitted and not yet finished
	Queued    int    // transfers waiting for admission
}

// Puller is the node-side front of a Client: admission by bytes in flight
// and deduplication of concurrent pulls of one object id.
//
// Every transfer runs in its own goroutine with a context that is
// cancelled when every Pull waiting on it has given up, so one caller's
// cancellation does not fail the others. mu guards all fields below it and
// is never held across I/O.
type Puller struct {
	client *Client
	max    uint64

	mu       sync.Mutex
	inflight uint64
	queue    []*admitWaiter // FIFO
	active   map[ids.ObjectID]*transfer
	stats    PullerStats
	closed   bool
	// running counts the transfers' goroutines, which Close waits for:
	// they write into buffers (a node's arena) that must outlive them.
	running sync.WaitGroup
}

type admitWaiter struct {
	size  uint64
	ready chan struct{} // closed when admitted
}

// transfer is one in-flight pull shared by every caller of its id.
type transfer struct {
	done    chan struct{} // closed when n and err are set
	n       uint64
	err     error
	waiters int // guarded by Puller.mu
	cancel  context.CancelFunc
}

// NewPuller returns a Puller pulling through client.
func NewPuller(client *Client, cfg PullerConfig) (*Puller, error) {
	if client == nil {
		return nil, errs.Invalidf("remote: nil Client")
	}
	if cfg.MaxInFlight == 0 {
		return nil, errs.Invalidf("remote: MaxInFlight must be > 0")
	}
	return &Puller{client: client, max: cfg.MaxInFlight, active: make(map[ids.ObjectID]*transfer)}, nil
}

// FinishFunc ends a transfer: it runs once, on the transfer's goroutine,
// after the last byte was written into the buffer alloc gave (or the
// transfer failed, err non-nil, and writes nothing more), and what it
// returns is the transfer's result. It is where the buffer is sealed or
// given back: not in a caller of Pull, who may have left before the
// transfer ended while others wait on it.
type FinishFunc func(n uint64, err error) error

// Pull fetches id from addr into the buffer alloc returns, as
// Client.Pull, unless a pull of id is already in flight through p: then
// it waits for that transfer and returns its result without calling
// alloc (the bytes land in the first caller's buffer, which in atoll is
// the one local copy of the object). shared reports which case occurred.
// finish (nil: none) ends the transfer (FinishFunc); a joining caller's
// finish is not called. A caller whose ctx ends returns at once; the
// transfer goes on while any caller waits, and is cancelled, then
// finished, when none does.
func (p *Puller) Pull(ctx context.Context, addr string, id ids.ObjectID, alloc AllocFunc, finish FinishFunc) (n uint64, shared bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, false, errs.Unavailablef("remote: pull of %s: the puller is closed (the node is stopping)", id)
	}
	t, shared := p.active[id]
	if shared {
		p.stats.Joined++
	} else {
		tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		t = &transfer{done: make(chan struct{}), cancel: cancel}
		p.active[id] = t
		p.stats.Transfers++
		p.running.Add(1)
		go p.run(tctx, t, addr, id, alloc, finish)
	}
	t.waiters++
	p.mu.Unlock()

	select {
	case <-t.done:
		p.leave(t)
		return t.n, shared, t.err
	case <-ctx.Done():
		p.leave(t)
		return 0, shared, ctx.Err()
	}
}

func (p *Puller) leave(t *transfer) {
	p.mu.Lock()
	t.waiters--
	last := t.waiters == 0
	p.mu.Unlock()
	if last {
		t.cancel() // nobody wants the result any more
	}
}

// Close cancels every transfer in flight and waits until their
// goroutines have returned, so nothing writes into a buffer alloc gave
// out once Close returns; later Pulls fail with UNAVAILABLE. Close the
// Client first, so that transfers blocked on the network end at once.
func (p *Puller) Close() {
	p.mu.Lock()
	p.closed = true
	for _, t := range p.active {
		t.cancel()
	}
	p.mu.Unlock()
	p.running.Wait()
}

func (p *Puller) run(ctx context.Context, t *transfer, addr string, id ids.ObjectID, alloc AllocFunc, finish FinishFunc) {
	defer p.running.Done()
	var admitted uint64
	t.n, t.err = p.client.Pull(ctx, addr, id, func(size uint64) ([]byte, error) {
		if err := p.admit(ctx, size); err != nil {
			return nil, err
		}
		admitted = size
		return alloc(size)
	})
	if finish != nil {
		t.err = finish(t.n, t.err)
	}
	p.mu.Lock()
	p.release(admitted)
	delete(p.active, id)
	p.mu.Unlock()
	t.cancel()
	close(t.done)
}

// admit blocks until size bytes fit under MaxInFlight, in FIFO order.
func (p *Puller) admit(ctx context.Context, size uint64) error {
	p.mu.Lock()
	if len(p.queue) == 0 && p.fits(size) {
		p.inflight += size
		p.mu.Unlock()
		return nil
	}
	w := &admitWaiter{size: size, ready: make(chan struct{})}
	p.queue = append(p.queue, w)
	p.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-w.ready: // admitted concurrently: give the bytes back
			p.release(size)
		default:
			p.removeWaiter(w)
			p.grant() // the head may have changed
		}
		return ctx.Err()
	}
}

func (p *Puller) fits(size uint64) bool {
	return p.inflight == 0 || p.inflight+size <= p.max
}

// release returns size bytes and admits queued waiters. p.mu is held.
func (p *Puller) release(size uint64) {
	if size > p.inflight {
		panic("remote: Puller in-flight accounting underflow")
	}
	p.inflight -= size
	p.grant()
}

// grant admits waiters from the head of the queue while they fit. p.mu
// is held.
func (p *Puller) grant() {
	for len(p.queue) > 0 && p.fits(p.queue[0].size) {
		w := p.queue[0]
		p.queue = p.queue[1:]
		p.inflight += w.size
		close(w.ready)
	}
}

func (p *Puller) removeWaiter(w *admitWaiter) {
	for i, q := range p.queue {
		if q == w {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			return
		}
	}
}

// Stats returns a snapshot of p's counters.
func (p *Puller) Stats() PullerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.InFlight = p.inflight
	s.Queued = len(p.queue)
	return s
}
