package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// upFile is TestUpStatusDown's cluster file: one worker type kept at one
// node by its min_workers.
const upFile = `
cluster_name: up-test
idle_timeout: 1h
interval: 200ms
provider:
  type: local
head:
  num_cpus: 1
  object_store_memory: 64MiB
node_types:
  w1:
    resources: {CPU: 1, w: 1}
    min_workers: 1
    max_workers: 1
    object_store_memory: 64MiB
`

func TestUpArgs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(upFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := upArgs(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--head", "--autoscaler=" + path, "--num-cpus=1", "--object-store-memory=67108864"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("upArgs %q, want %q", got, want)
	}
	if err := os.WriteFile(path, []byte("node_types: {a: {resources: {CPU: 1}, max_workers: 1}}\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := upArgs(path); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("a file with an unknown key: %v", err)
	}
	for _, a := range [][]string{{"up"}, {"up", "a", "b"}, {"down"}} {
		if _, _, err := execute(a...); err == nil {
			t.Errorf("%q: no error", a)
		}
	}
}

// TestUpStatusDown runs `atoll up FILE` as a program: the head starts in
// the background with the autoscaler, which launches the worker type's
// min_workers node; `atoll status` shows the autoscaler's types and its
// decision with the reason; `atoll down FILE` stops the worker, then the
// head.
func TestUpStatusDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster nodes")
	}
	isolate(t)
	t.Cleanup(func() { // kill what down did not
		recs, _ := readRecords(&bytes.Buffer{})
		for _, e := range recs {
			if isNodeProcess(e.rec.PID) {
				_ = syscall.Kill(e.rec.PID, syscall.SIGKILL)
			}
		}
	})
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(upFile), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "up", path, "--", "--port=0", "--gossip-port=0", "--transfer-port=0", "--include-dashboard=false")
	cmd.Env = append(os.Environ(), runAsCommand+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("atoll up: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "cluster address: ") {
		t.Fatalf("up output:\n%s", stdout.String())
	}

	row := regexp.MustCompile(`(?m)^w1 +CPU=1,w=1 +1 +1 +0 +1 +0$`)
	var out string
	testutil.EventuallyWithin(t, 2*time.Minute, "the min_workers node running", func() bool {
		o, _, err := execute("status")
		out = o
		return err == nil && row.MatchString(o) && strings.Contains(o, "2 nodes alive (1 head, 1 worker")
	})
	for _, want := range []string{"autoscaler (local provider", "pending demand: none", "last decisions:", "launch", "1 w1", "min_workers"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	// The same in JSON: the autoscaler's section beside the nodes.
	js, _, err := execute("status", "--json")
	var st clusterclient.Status
	if err != nil || json.Unmarshal([]byte(js), &st) != nil || st.Autoscaler == nil || st.Autoscaler.Provider != "local" || len(st.Autoscaler.Decisions) == 0 {
		t.Errorf("status --json (%v): no autoscaler section with its decisions:\n%s", err, js)
	}

	o, e, err := execute("down", path)
	if err != nil || !strings.Contains(o, "the autoscaler stopped 1 node(s)") || !strings.Contains(o, "stopped 1 atoll node(s)") {
		t.Fatalf("down: %v\n%s%s", err, o, e)
	}
	recs, err := readRecords(&bytes.Buffer{})
	if err != nil || len(recs) != 0 {
		t.Errorf("records after down: %v %v", recs, err)
	}
}
