package memsample

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/internal/errs"
)

func TestOptions(t *testing.T) {
	src := SourceFunc(func(context.Context) ([]Reading, error) { return nil, nil })
	for _, o := range []Options{{}, {Interval: -time.Second}, {Interval: time.Second, MaxSamples: -1}, {Interval: time.Second, StaleAfter: -1}} {
		if _, err := NewFromSource(src, o); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want ErrInvalidArgument", o, err)
		}
	}
	if _, err := NewFromSource(nil, Options{Interval: time.Second}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("nil source: %v", err)
	}
	if _, err := New(nil, Options{Interval: time.Second}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("nil connection: %v", err)
	}
}

// A sampler of a Source: Start returns after the first sample, a failed
// read takes no sample and is counted, Stop ends the goroutine and may be
// repeated, a sampler starts once.
func TestSamplerSource(t *testing.T) {
	var reads atomic.Int64
	src := SourceFunc(func(context.Context) ([]Reading, error) {
		n := reads.Add(1)
		if n == 3 {
			return nil, errors.New("store gone for a moment")
		}
		return []Reading{{NodeID: "n1", Role: RoleHead, Used: uint64(n), Capacity: 100}}, nil
	})
	s, err := NewFromSource(src, Options{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Stop(); len(got.Times) != 0 {
		t.Fatalf("Stop before Start: %+v", got)
	}
	if err := s.Start(context.Background()); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("Start after Stop: %v", err)
	}

	s, _ = NewFromSource(src, Options{Interval: time.Millisecond})
	reads.Store(0)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.Samples(); len(got.Times) < 1 || got.Start.IsZero() || got.Times[0] != 0 {
		t.Fatalf("after Start: %+v", got)
	}
	if err := s.Start(context.Background()); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("second Start: %v", err)
	}
	testutil.Eventually(t, "10 ticks", func() bool { return s.Progress().Ticks >= 10 })
	got := s.Stop()
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if got.ReadErrors != 1 || uint64(len(got.Times))+got.ReadErrors != s.Progress().Ticks {
		t.Errorf("%d samples, %d read errors, %d ticks", len(got.Times), got.ReadErrors, s.Progress().Ticks)
	}
	if p := s.Progress(); p.Nodes != 1 || p.Total == 0 || p.Samples != len(got.Times) || p.Peak != got.Peak().Bytes {
		t.Errorf("progress %+v", p)
	}
	if again := s.Stop(); len(again.Times) != len(got.Times) {
		t.Errorf("second Stop: %d samples, first %d", len(again.Times), len(got.Times))
	}
}

// Sampling ends with Start's context.
func TestSamplerContext(t *testing.T) {
	src := SourceFunc(func(context.Context) ([]Reading, error) { return nil, nil })
	s, _ := NewFromSource(src, Options{Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-s.Done()

	// A context that ended before Start.
	s, _ = NewFromSource(src, Options{Interval: time.Millisecond})
	if err := s.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled context: %v", err)
	}
}
