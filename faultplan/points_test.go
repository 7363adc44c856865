package faultplan

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
)

const pointsPlan = `
seed: 3
rules:
  - name: kill-maps
    action: kill-worker
    point: before-execute
    task: sort.map
    probability: 0.5
    count: 3
    node: workers
  - action: kill-worker
    point: after-execute
  - name: full
    action: spill-full
    count: 2
  - name: slow
    action: spill-slow
    delay: 1ms
`

func TestPointsRules(t *testing.T) {
	p, err := Parse([]byte(pointsPlan))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Rules[1]; r.Name != "kill-worker#1" || r.Point != AfterExecute || !r.Action.AtPoints() || r.Action.Timed() {
		t.Fatalf("rule 1: %+v", r)
	}
	if p.Injector(Workers).Remove(1) {
		t.Fatal("a rule at points became a message rule")
	}
	if pts := (&Plan{Rules: p.Rules[:1]}).Points(Head, nil); pts != nil {
		t.Fatal("a workers' rule at points installed on the head")
	}
	var nilPoints *Points
	if _, ok := nilPoints.KillWorker(BeforeExecute, "x"); ok || nilPoints.BeforeWrite() != nil {
		t.Fatal("nil Points injected a fault")
	}

	fi := actors.NewFaultInjector()
	pts := p.Points(Workers, fi)
	var slept time.Duration
	pts.sleep = func(d time.Duration) { slept += d }
	// The two spill-full writes fail as a full disk would; then spill-slow
	// takes the writes and the reads.
	for i := range 2 {
		err := pts.BeforeWrite()
		var full *DiskFullError
		if !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &full) || full.Rule != "full" {
			t.Fatalf("write %d: %v, want the rule's ENOSPC", i, err)
		}
	}
	if err := pts.BeforeWrite(); err != nil || slept != time.Millisecond {
		t.Fatalf("third write: %v, slept %v", err, slept)
	}
	pts.BeforeRead()
	if slept != 2*time.Millisecond {
		t.Fatalf("read slept %v in all", slept)
	}
	// after-execute kills anything; before-execute only sort.map, half
	// the time, three times at most.
	if h, ok := pts.KillWorker(AfterExecute, "other"); !ok || h.Rule != "kill-worker#1" {
		t.Fatalf("after-execute: %+v %v", h, ok)
	}
	if _, ok := pts.KillWorker(BeforeExecute, "other", "other"); ok {
		t.Fatal("killed a task the rule does not name")
	}
	kills := 0
	for range 40 {
		if _, ok := pts.KillWorker(BeforeExecute, "sort.map"); ok {
			kills++
		}
	}
	if kills != 3 {
		t.Fatalf("%d kills, want the rule's count 3", kills)
	}
	var log []string
	for _, e := range fi.Log() {
		log = append(log, e.String())
	}
	if len(log) != 8 || !strings.HasSuffix(log[0], "full#1 spill-full @spill-write") ||
		!strings.HasSuffix(log[4], "kill-worker#1#1 kill-worker other@after-execute") || !strings.Contains(log[5], "kill-maps#") {
		t.Fatalf("fault log %q", log)
	}
	if fi.Stats().Recorded != 8 {
		t.Fatalf("stats %+v", fi.Stats())
	}

	// The same plan and seed make the same decisions; another seed others.
	decisions := func(seed uint64) []bool {
		p.Seed = seed
		pts := p.Points(Workers, nil)
		var out []bool
		for range 20 {
			_, ok := pts.KillWorker(BeforeExecute, "sort.map")
			out = append(out, ok)
		}
		return out
	}
	if a, b, c := decisions(9), decisions(9), decisions(10); !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("seed 9: %v and %v; seed 10: %v", a, b, c)
	}
}

// A spill rule's at and for bound it in time, from the node's start.
func TestSpillRuleWindow(t *testing.T) {
	p, err := Parse([]byte("rules: [{action: spill-full, at: 1h}, {action: spill-full, for: 1ns}]"))
	if err != nil {
		t.Fatal(err)
	}
	pts := p.Points(Driver, nil)
	pts.start = time.Now().Add(-time.Second) // past the second rule's window
	if err := pts.BeforeWrite(); err != nil {
		t.Fatalf("a write outside both windows failed: %v", err)
	}
	pts.start = time.Now().Add(-2 * time.Hour)
	if err := pts.BeforeWrite(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write inside the first window: %v", err)
	}
}

func TestPointsParseErrors(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{"rules: [{action: kill-worker}]", "point"},
		{"rules: [{action: kill-worker, point: mid-air}]", "point"},
		{"rules: [{action: kill-worker, point: before-execute, delay: 1ms}]", "delay, at and for"},
		{"rules: [{action: kill-worker, point: before-execute, message: TaskResult}]", "not for rules at points"},
		{"rules: [{action: kill-worker, point: after-execute, times: 2}]", "not for rules at points"},
		{"rules: [{action: spill-full, point: before-execute}]", "point and task"},
		{"rules: [{action: spill-full, task: sort.map}]", "point and task"},
		{"rules: [{action: spill-full, delay: 1ms}]", "delay is for spill-slow"},
		{"rules: [{action: spill-slow}]", "positive one"},
		{"rules: [{action: spill-slow, delay: 1ms, for: -1s}]", "for >= 0"},
		{"rules: [{action: spill-full, probability: 2}]", "probability"},
		{"rules: [{action: spill-full, count: -1}]", "count"},
		{"rules: [{action: spill-full, node: moon}]", "node"},
		{"rules: [{action: drop, point: before-execute}]", "point, task and for"},
		{"rules: [{action: kill-node, for: 1s}]", "point, task and for"},
	} {
		_, err := Parse([]byte(tc.plan))
		if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument mentioning %q", tc.plan, err, tc.want)
		}
	}
}
