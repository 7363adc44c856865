package pss

import (
	"sync"
	"sync/atomic"
	"time"
)

// Sampler measures the total PSS of a changing set of processes at a fixed
// interval, in one goroutine, and keeps the peak. Typical use in a
// benchmark:
//
//	s := pss.NewSampler(50*time.Millisecond, func() []int {
//		pids, _ := pss.Tree(os.Getpid())
//		return pids
//	})
//	s.Start()
//	run()
//	peak := s.Stop()
//
// Processes that exit between the listing and the read count as zero; other
// read errors are kept and reported by Err.
type Sampler struct {
	interval time.Duration
	pids     func() []int

	peak    atomic.Uint64
	samples atomic.Uint64

	mu   sync.Mutex // guards stop and done
	stop chan struct{}
	done chan struct{}

	errMu   sync.Mutex
	lastErr error
}

// NewSampler returns a stopped sampler that sums the PSS of pids() every
// interval (at least 1ms).
func NewSampler(interval time.Duration, pids func() []int) *Sampler {
	return &Sampler{interval: max(interval, time.Millisecond), pids: pids}
}

// Start takes a first sample and then samples every interval until Stop.
// Starting a running sampler does nothing; a stopped one can be started
// again and keeps its peak.
func (s *Sampler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.sample()
	go s.loop(s.stop, s.done)
}

func (s *Sampler) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

func (s *Sampler) sample() {
	total, err := Sum(s.pids())
	if err != nil {
		s.errMu.Lock()
		s.lastErr = err
		s.errMu.Unlock()
	}
	s.samples.Add(1)
	for {
		old := s.peak.Load()
		if total <= old || s.peak.CompareAndSwap(old, total) {
			return
		}
	}
}

// Stop takes a last sample, stops the sampling goroutine, waits for it to
// exit and returns the peak in bytes. Stopping a stopped sampler just
// returns the peak.
func (s *Sampler) Stop() (peak uint64) {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop, s.done = nil, nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
		s.sample()
	}
	return s.Peak()
}

// Peak returns the highest total PSS sampled so far, in bytes.
func (s *Sampler) Peak() uint64 { return s.peak.Load() }

// Samples returns how many samples have been taken.
func (s *Sampler) Samples() uint64 { return s.samples.Load() }

// Err returns the last error met while sampling, if any.
func (s *Sampler) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.lastErr
}
