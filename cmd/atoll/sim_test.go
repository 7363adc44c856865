package main

import (
	"strings"
	"testing"
)

// TestSimCommand runs one seed of the kv workload, and two seeds that
// print the table; -h prints the flags.
func TestSimCommand(t *testing.T) {
	stdout, stderr, err := execute("sim", "-workload", "kv", "-seed", "3")
	if err != nil {
		t.Fatalf("sim -seed 3: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "seed 3: PASS") || !strings.Contains(stdout, "hash ") {
		t.Errorf("sim -seed 3 printed:\n%s", stdout)
	}
	stdout, stderr, err = execute("sim", "-workload", "kv", "-seeds", "2", "-first", "5", "-parallel", "2", "-all")
	if err != nil {
		t.Fatalf("sim -seeds 2: %v\n%s%s", err, stdout, stderr)
	}
	for _, want := range []string{"seed  faults  verdict", "2 seeds: 2 passed, 0 failed", "simulated time"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sim -seeds 2 lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, err = execute("sim", "-h")
	if err != nil || !strings.Contains(stdout, "-schedule TEXT") || !strings.Contains(stdout, "mixed, streams, groups, kv") {
		t.Errorf("sim -h: %v\n%s", err, stdout)
	}
	_, stderr, err = execute("sim", "-workload", "nope")
	if err == nil || !strings.Contains(stderr, `no workload "nope"`) {
		t.Errorf("sim -workload nope: %v\n%s", err, stderr)
	}
}
