package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Run(m) // serves instead as a node or worker process of a test's cluster
}

// smallOptions sizes a run for a test: about 15 s under -race, JSON out.
func smallOptions() options {
	opts := defaultOptions()
	opts.store, opts.driverStore = 16<<20, 16<<20
	opts.sortSize, opts.partitions = 24<<20, 4 // 6 MiB chunks: more than fits a store at once
	opts.duration, opts.echoTasks, opts.echoHold = 2*time.Second, 4, 20*time.Millisecond
	opts.bankTransfers, opts.driverCalls, opts.killEvery = 10, 10, time.Second
	opts.json = true
	return opts
}

// runSmall runs the command with opts (JSON out) and returns its records
// by metric, after checking that every checker passed; out and progress
// are logged if the test fails.
func runSmall(t *testing.T, opts options) map[string]map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("records:\n%s\nprogress:\n%s", out.String(), progress.String())
		}
	})
	ok, err := run(ctx, opts, &out, &progress)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"sort", "bank_conservation", "bank_order", "task_results", "stores", "no_read_after_free"} {
		if r := got["checker_"+c]; r == nil || r["value"] != 1.0 || r["verified"] != true {
			t.Errorf("checker %s: %v", c, r)
		}
	}
	if !ok {
		t.Error("run reports a failed checker")
	}
	return got
}

// TestDefaultPlanRunPasses runs the command small under its default plan
// on three node processes: every checker passes, and every rule of the
// plan, and the driver's worker kills, injected at least one fault.
func TestDefaultPlanRunPasses(t *testing.T) {
	opts := smallOptions()
	got := runSmall(t, opts)
	if r := got["checker_plan"]; r != nil {
		t.Errorf("not every timed rule fired: %v", r)
	}
	p, err := loadPlan("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Rules {
		if rec := got["faults_rule_"+metricName(r.Name)]; rec == nil || rec["value"].(float64) < 1 {
			t.Errorf("rule %s (%s) injected nothing: %v", r.Name, r.Action, rec)
		}
	}
	if rec := got["faults_kill_worker"]; rec == nil || rec["value"].(float64) < 1 {
		t.Errorf("no worker killed: %v", rec)
	}
	if rec := got["results_verified"]; rec == nil || rec["value"].(float64) < float64(opts.sortSize/8) || rec["verified"] != true {
		t.Errorf("results verified: %v", rec)
	}
	if rec := got["faults_rule_kill_a_node"]; rec != nil && !strings.Contains(rec["config"].(map[string]any)["target"].(string), "not the head") {
		t.Errorf("kill-node target: %v", rec)
	}
}

// TestFullPlanRunPasses runs the command small under testdata/full.yaml on
// four node processes: dropped control messages, workers killed at
// points, a full then slow spill disk, a node cut off and healed, another
// killed. Every checker passes; the partition and the kill happened, and
// the cut node was declared dead.
func TestFullPlanRunPasses(t *testing.T) {
	opts := smallOptions()
	opts.nodes, opts.plan, opts.killEvery = 4, "testdata/full.yaml", 2*time.Second
	got := runSmall(t, opts)
	for _, rule := range []string{"cut_a_node", "kill_a_node", "lossy_loads"} {
		if rec := got["faults_rule_"+rule]; rec == nil || rec["value"].(float64) < 1 {
			t.Errorf("rule %s injected nothing: %v", rule, rec)
		}
	}
}

// TestTableNamesEveryChecker prints the table of a made-up outcome.
func TestTableNamesEveryChecker(t *testing.T) {
	p, err := loadPlan("", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := &outcome{wall: time.Second, faults: []faultRow{{Rule: "r", Kind: "delay", Target: "x", Driver: 1, Nodes: 2}},
		verdicts: []verdict{{Name: "sort", What: "sorted"}, {Name: "stores", What: "empty", Err: os.ErrNotExist}}}
	var buf bytes.Buffer
	o.printTable(&buf, p, defaultOptions())
	for _, want := range []string{"faults injected", "r  ", "sort", "PASS", "stores", "FAIL", "tasks retried", "objects reconstructed", "results verified"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}
