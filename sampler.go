package atoll

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/memsample"
)

// SampleMemory starts sampling the object-store use of every node of this
// driver's cluster every interval (Dask's MemorySampler; see package
// memsample) and returns the running sampler, once it has taken its first
// sample. Sampling goes on until the sampler's Stop, the end of ctx, or
// Shutdown (which stops every sampler still running); Stop returns the
// samples:
//
//	s, err := atoll.SampleMemory(ctx, 100*time.Millisecond)
//	... the workload ...
//	samples := s.Stop()
//	fmt.Println("peak cluster store use:", samples.Peak().Bytes)
//	err = samples.WriteSVG(f, memsample.SVGOptions{Title: "AMM on"})
//
// A driver joined to a cluster (WithAddress) samples the load reports of
// every node, its own included; the embedded single node (Init with no
// address) samples its own store, as the one node of its cluster. It
// fails with ErrInvalidArgument for an interval that is not positive or
// in a worker process, and ErrNotInitialized before Init.
func SampleMemory(ctx context.Context, interval time.Duration) (*memsample.Sampler, error) {
	rt, err := running()
	if err != nil {
		return nil, err
	}
	if rt.node == nil {
		return nil, errs.Invalidf("SampleMemory: call it in the driver, not in a task or an actor")
	}
	opts := memsample.Options{Interval: interval, Logger: rt.log}
	var s *memsample.Sampler
	if rt.node.Gateway() != nil {
		s, err = memsample.New(rt.node.Conn(), opts)
	} else {
		s, err = memsample.NewFromSource(localStore{rt}, opts)
	}
	if err != nil {
		return nil, err
	}
	if !rt.samplers.add(s) {
		return nil, errs.ErrNotInitialized
	}
	if err := s.Start(ctx); err != nil {
		rt.samplers.remove(s)
		return nil, err
	}
	return s, nil
}

// localStore reads the embedded node's store for a sampler.
type localStore struct{ rt *core }

func (l localStore) Read(ctx context.Context) ([]memsample.Reading, error) {
	st, err := l.rt.store.Stats(ctx)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return []memsample.Reading{{NodeID: l.rt.nodeID.String(), Role: memsample.RoleHead, Hostname: host,
		Used: st.UsedBytes, Capacity: st.CapacityBytes, Spilled: st.SpilledBytesCurrent}}, nil
}

// samplerSet holds the samplers SampleMemory started, for Shutdown to
// stop. Samplers that ended are dropped on the next add.
type samplerSet struct {
	mu     sync.Mutex // a leaf; never held across a sampler's Stop
	closed bool
	set    map[*memsample.Sampler]struct{}
}

// add adds s, unless the set was stopped.
func (ss *samplerSet) add(s *memsample.Sampler) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	for other := range ss.set {
		select {
		case <-other.Done():
			delete(ss.set, other)
		default:
		}
	}
	if ss.set == nil {
		ss.set = map[*memsample.Sampler]struct{}{}
	}
	ss.set[s] = struct{}{}
	return true
}

func (ss *samplerSet) remove(s *memsample.Sampler) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.set, s)
}

// stop stops every sampler and refuses new ones.
func (ss *samplerSet) stop() {
	ss.mu.Lock()
	ss.closed = true
	set := ss.set
	ss.set = nil
	ss.mu.Unlock()
	for s := range set {
		s.Stop()
	}
}
