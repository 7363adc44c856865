package memsample

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Defaults of Options.
const (
	DefaultMaxNodes   = 1024
	DefaultStaleAfter = 3 * time.Second
)

// Options configures a Sampler. Zero fields other than Interval take the
// defaults.
type Options struct {
	// Interval is the time between samples; it must be positive. Nodes
	// report every 100 ms, so a shorter interval samples the same
	// reports again.
	Interval time.Duration
	// MaxSamples bounds the samples kept (default DefaultMaxSamples);
	// past it samples are merged pairwise (see the package doc).
	MaxSamples int
	// MaxNodes bounds the nodes whose latest report is kept and the
	// nodes that get a column (default DefaultMaxNodes).
	MaxNodes int
	// StaleAfter leaves a node out of the samples once its latest report
	// is older (default DefaultStaleAfter). Cluster sources only.
	StaleAfter time.Duration
	// Prefix starts the cluster's subjects (default
	// cluster.DefaultPrefix). Cluster sources only.
	Prefix string
	// Logger receives the sampler's debug lines (default slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Interval <= 0 {
		return o, errs.Invalidf("memsample: interval %v: want a positive duration", o.Interval)
	}
	if o.MaxSamples < 0 || o.MaxNodes < 0 || o.StaleAfter < 0 {
		return o, errs.Invalidf("memsample: MaxSamples %d, MaxNodes %d, StaleAfter %v: must not be negative", o.MaxSamples, o.MaxNodes, o.StaleAfter)
	}
	if o.MaxSamples == 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.MaxNodes == 0 {
		o.MaxNodes = DefaultMaxNodes
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.Prefix == "" {
		o.Prefix = cluster.DefaultPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// A Source reads the store of every live node. A Sampler calls Read on
// its goroutine, once per tick; a failed read is counted
// (Samples.ReadErrors) and takes no sample.
type Source interface {
	Read(ctx context.Context) ([]Reading, error)
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context) ([]Reading, error)

// Read calls f.
func (f SourceFunc) Read(ctx context.Context) ([]Reading, error) { return f(ctx) }

// Progress is where a running sampler is: the samples it keeps, the
// ticks it sampled, its last tick's nodes and cluster total, and the
// largest cluster total so far.
type Progress struct {
	Samples int
	Ticks   uint64
	Nodes   int
	Total   uint64
	Peak    uint64
	// Elapsed is the last tick's offset from the first.
	Elapsed time.Duration
}

// Sampler records the store use of a cluster's nodes every interval (see
// the package doc). Its methods are safe for concurrent use.
type Sampler struct {
	opts    Options
	src     Source         // NewFromSource
	cluster *clusterSource // New
	ready   chan struct{}  // closed after the first sample
	done    chan struct{}  // closed when the goroutine ends (or Start fails)

	// mu guards what follows; never held across I/O or a Read.
	mu         sync.Mutex
	started    bool
	stopped    bool
	cancel     context.CancelFunc
	table      *table
	start      time.Time
	ticks      uint64
	readErrors uint64
	last       Progress
	peak       uint64
}

// New returns a sampler of the cluster nc is connected to: of its nodes'
// load reports, listed by its GCS. Start starts it; the caller keeps
// nc open until Stop returns.
func New(nc *nats.Conn, opts Options) (*Sampler, error) {
	if nc == nil {
		return nil, errs.Invalidf("memsample.New: nil NATS connection")
	}
	s, err := newSampler(opts)
	if err != nil {
		return nil, err
	}
	s.cluster = newClusterSource(nc, s.opts)
	return s, nil
}

// NewFromSource returns a sampler that reads src on every tick.
func NewFromSource(src Source, opts Options) (*Sampler, error) {
	if src == nil {
		return nil, errs.Invalidf("memsample.NewFromSource: nil Source")
	}
	s, err := newSampler(opts)
	if err != nil {
		return nil, err
	}
	s.src = src
	return s, nil
}

func newSampler(opts Options) (*Sampler, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Sampler{opts: opts, ready: make(chan struct{}), done: make(chan struct{}),
		table: newTable(opts.MaxSamples, opts.MaxNodes)}, nil
}

// Start starts sampling and returns once the first sample is taken (a
// cluster sampler first waits, at most 2 s, until every node the GCS
// lists alive has reported). Sampling goes on until Stop is called or
// ctx ends. A sampler starts once: a second Start, or a Start after
// Stop, fails with ErrInvalidArgument.
func (s *Sampler) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return errs.Invalidf("memsample: a sampler starts once")
	}
	s.started = true
	s.mu.Unlock()
	fail := func(err error) error {
		close(s.done)
		return err
	}
	if s.cluster != nil {
		if err := s.cluster.subscribe(); err != nil {
			return fail(err)
		}
	}
	s.mu.Lock()
	if s.stopped { // Stop ran meanwhile
		s.mu.Unlock()
		s.closeSource()
		return fail(errs.Invalidf("memsample: stopped while starting"))
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.mu.Unlock()
	go s.run(runCtx)
	select {
	case <-s.ready:
		return nil
	case <-s.done:
		if err := ctx.Err(); err != nil {
			return err
		}
		return errs.Unavailablef("memsample: sampling ended before its first sample")
	}
}

// Stop stops sampling, waits for the sampler's goroutine to end and
// returns the samples. It may be called more than once, and before
// Start.
func (s *Sampler) Stop() *Samples {
	s.mu.Lock()
	s.stopped = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-s.done
	}
	return s.Samples()
}

// Done is closed once sampling has ended: Stop was called, Start's
// context ended, the NATS connection closed or Start failed. It is
// never closed for a sampler that was not started.
func (s *Sampler) Done() <-chan struct{} { return s.done }

// Samples returns a copy of the samples taken so far.
func (s *Sampler) Samples() *Samples {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.samples(s.start, s.opts.Interval, s.readErrors)
}

// Progress says how far sampling got.
func (s *Sampler) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.last
	p.Samples, p.Ticks, p.Peak = len(s.table.rows), s.ticks, s.peak
	return p
}

// run is the sampler's goroutine.
func (s *Sampler) run(ctx context.Context) {
	defer close(s.done)
	defer s.closeSource()
	var msgs <-chan *nats.Msg
	if c := s.cluster; c != nil {
		msgs = c.msgs
		if !c.awaitReports(ctx) {
			return
		}
	}
	s.tick(ctx)
	close(s.ready)
	ticker := time.NewTicker(s.opts.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			s.cluster.receive(m)
		case <-ticker.C:
			if s.cluster != nil && s.cluster.nc.IsClosed() {
				s.opts.Logger.Debug("memsample: the NATS connection closed; sampling ends")
				return
			}
			s.tick(ctx)
		}
	}
}

// tick takes one sample.
func (s *Sampler) tick(ctx context.Context) {
	now := time.Now()
	var readings []Reading
	var err error
	if s.cluster != nil {
		readings = s.cluster.read(ctx, now)
	} else {
		readings, err = s.src.Read(ctx)
	}
	s.mu.Lock()
	if s.start.IsZero() {
		s.start = now
	}
	at := now.Sub(s.start)
	s.ticks++
	if err != nil {
		s.readErrors++
	} else {
		total, nodes := s.table.add(at, readings)
		s.last = Progress{Nodes: nodes, Total: total, Elapsed: at}
		s.peak = max(s.peak, total)
	}
	s.mu.Unlock()
	if err != nil {
		s.opts.Logger.Debug("memsample: read failed", "err", err)
	}
}

func (s *Sampler) closeSource() {
	if s.cluster != nil {
		s.cluster.close()
	}
}
