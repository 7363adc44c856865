package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestBurstsScaleUpAndDown runs the sample small: two bursts on a cluster
// that may add two workers. Tasks wait while the cluster grows, it grows
// past the head, it is back to the head alone at the end, and it used
// fewer node-seconds than a fixed cluster of its peak.
func TestBurstsScaleUpAndDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of node processes")
	}
	var out bytes.Buffer
	opts := options{bursts: 2, tasks: 40, max: 2, work: 200 * time.Millisecond, quiet: 4 * time.Second, idle: time.Second,
		sample: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sum, err := run(ctx, opts, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	queued := false
	for _, s := range sum.samples {
		queued = queued || s.queued > 0
	}
	last := sum.samples[len(sum.samples)-1]
	if sum.peak < 2 || !queued || last.nodes != 1 || sum.nodeSeconds >= sum.fixedNodeSeconds {
		t.Errorf("peak %d nodes, tasks waited %v, %d nodes at the end, %.1f node-seconds against %.1f fixed:\n%s",
			sum.peak, queued, last.nodes, sum.nodeSeconds, sum.fixedNodeSeconds, out.String())
	}
	if !strings.Contains(out.String(), "node-seconds autoscaled against") {
		t.Errorf("no summary line:\n%s", out.String())
	}
}
