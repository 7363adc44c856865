package microbench

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// fakeClock advances by tick every time it is read.
type fakeClock struct {
	t    time.Time
	tick time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.tick)
	return c.t
}

func TestTimerStepAndRate(t *testing.T) {
	ctx := context.Background()
	ops := 0
	w := &workload{units: 1000, op: func(context.Context) error { ops++; return nil }}
	// Each op reads the clock once more: 1ms per op.
	clock := &fakeClock{tick: time.Millisecond}
	tm := timer{d: 100 * time.Millisecond, now: clock.now}
	step, err := tm.warmUp(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up lasts d/2 = 50 clock reads after the start: 50 ops.
	if ops != 50 || step != 6 {
		t.Fatalf("warm-up ran %d ops, step %d; want 50 and 6", ops, step)
	}
	ops = 0
	rate, err := tm.rate(ctx, w, step)
	if err != nil {
		t.Fatal(err)
	}
	// Whole steps until 100ms have passed: one clock read per step.
	if ops%step != 0 || ops != 100*step {
		t.Fatalf("%d ops in steps of %d", ops, step)
	}
	if want := 1000 * float64(ops) / 0.1; math.Abs(rate-want) > 1e-6*want {
		t.Fatalf("rate %v, want %v", rate, want)
	}
}

func TestTimerZeroDurationRunsOneStep(t *testing.T) {
	ops := 0
	w := &workload{units: 1, op: func(context.Context) error { ops++; return nil }}
	clock := &fakeClock{tick: time.Microsecond}
	tm := timer{d: 0, now: clock.now}
	step, err := tm.warmUp(context.Background(), w)
	if err != nil || step != 1 || ops != 1 {
		t.Fatalf("step %d ops %d err %v", step, ops, err)
	}
	if r, err := tm.rate(context.Background(), w, step); err != nil || r <= 0 || math.IsInf(r, 0) || ops != 2 {
		t.Fatalf("rate %v ops %d err %v", r, ops, err)
	}
}

func TestTimerStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	w := &workload{units: 1, op: func(context.Context) error { return boom }}
	tm := timer{d: time.Second, now: (&fakeClock{tick: time.Millisecond}).now}
	if _, err := tm.warmUp(context.Background(), w); !errors.Is(err, boom) {
		t.Fatalf("warm-up error %v", err)
	}
	if _, err := tm.rate(context.Background(), w, 3); !errors.Is(err, boom) {
		t.Fatalf("rate error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok := &workload{units: 1, op: func(context.Context) error { return nil }}
	if _, err := tm.rate(ctx, ok, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("rate after cancel: %v", err)
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{5, 1, 3})
	if s.median != 3 || s.min != 1 || s.max != 5 {
		t.Fatalf("%+v", s)
	}
	s = summarize([]float64{4, 1, 3, 2})
	if s.median != 2.5 || s.min != 1 || s.max != 4 || s.rates[0] != 4 {
		t.Fatalf("%+v", s)
	}
}

func TestFormatRate(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.0123: "0.0123", 5.04: "5.04", 13.33: "13.3", 971.4: "971", 999.6: "1,000",
		8194.2: "8,194", 21744: "21,744", 1234567.8: "1,234,568", -2500: "-2,500",
	} {
		if got := formatRate(v); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestTimerRoundTrips(t *testing.T) {
	w := &workload{units: 1, roundTrips: true, op: func(context.Context) error { return nil }}
	// Each clock read advances 1ms: an op's begin and end are 1ms apart.
	clock := &fakeClock{tick: time.Millisecond}
	tm := timer{d: 10 * time.Millisecond, now: clock.now}
	if _, err := tm.rate(context.Background(), w, 1); err != nil {
		t.Fatal(err)
	}
	if len(w.trips) == 0 {
		t.Fatal("no round trips recorded")
	}
	for _, d := range w.trips {
		if d != time.Millisecond {
			t.Fatalf("trip %v, want 1ms", d)
		}
	}
}

func TestLatencyOf(t *testing.T) {
	if l := latencyOf(nil); l.n != 0 || l.p50 != 0 || l.p99 != 0 {
		t.Fatalf("no trips: %+v", l)
	}
	trips := make([]time.Duration, 0, 200)
	for i := 200; i >= 1; i-- { // unsorted
		trips = append(trips, time.Duration(i)*time.Microsecond)
	}
	l := latencyOf(trips)
	if l.n != 200 || l.p50 != 100*time.Microsecond || l.p99 != 198*time.Microsecond {
		t.Fatalf("got %+v; want n 200, p50 100us, p99 198us", l)
	}
	if l := latencyOf([]time.Duration{7}); l.p50 != 7 || l.p99 != 7 {
		t.Fatalf("one trip: %+v", l)
	}
}
