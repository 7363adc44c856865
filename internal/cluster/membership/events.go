package membership

import (
	"sync"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Event is a membership change: NodeJoined, NodeLeft or NodeUpdated. Events
// are values owned by the receiver; their slices are private copies.
type Event interface{ isEvent() }

// NodeJoined reports a node that became a live member.
type NodeJoined struct {
	ID   ids.NodeID
	Addr string // gossip address, host:port
	Meta []byte // the node's Config.Meta
}

// NodeLeft reports a node that is no longer a member. Dead is false for a
// graceful Member.Leave and true when the failure detector declared the node
// dead (or it left without announcing it; see the package doc).
type NodeLeft struct {
	ID   ids.NodeID
	Addr string
	Dead bool
}

// NodeUpdated reports a live node whose metadata (or address) changed.
type NodeUpdated struct {
	ID   ids.NodeID
	Addr string
	Meta []byte
}

func (NodeJoined) isEvent()  {}
func (NodeLeft) isEvent()    {}
func (NodeUpdated) isEvent() {}

// sink is one subscriber: an unbounded FIFO filled by push, which never
// blocks, and drained by one goroutine that calls deliver. deliver may block
// (a full channel); it returns false once done is closed.
type sink struct {
	mu      sync.Mutex
	items   []Event
	closed  bool
	wake    chan struct{} // capacity 1: "items may be non-empty"
	done    chan struct{} // closed by close
	stopped chan struct{} // closed when the drain goroutine returns
}

func newSink(deliver func(e Event, done <-chan struct{}) bool) *sink {
	s := &sink{
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go s.run(deliver)
	return s
}

// push appends e; it never blocks beyond a short critical section. Events
// pushed after close are dropped.
func (s *sink) push(e Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.items = append(s.items, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sink) run(deliver func(Event, <-chan struct{}) bool) {
	defer close(s.stopped)
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		s.mu.Lock()
		batch := s.items
		s.items = nil
		s.mu.Unlock()
		for _, e := range batch {
			if !deliver(e, s.done) {
				return
			}
		}
	}
}

// close stops the drain goroutine, dropping undelivered events, and waits
// for it to return. Idempotent.
func (s *sink) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return
	}
	s.closed = true
	s.items = nil
	s.mu.Unlock()
	close(s.done)
	<-s.stopped
}
