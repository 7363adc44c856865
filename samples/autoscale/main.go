// Command autoscale runs a bursty workload on an autoscaling local
// cluster and prints, over time, the nodes alive beside the tasks waiting
// (a text plot), then the node-seconds it used against a fixed cluster
// sized for the peak for the same time.
//
// The cluster starts as one head node of 1 CPU running the autoscaler
// with a cluster file of one worker type (1 CPU, at most -max workers,
// idle for -idle they go). Each burst submits -tasks tasks of -work of
// CPU each; between bursts the cluster is left alone for -quiet, long
// enough for idle workers to be drained and removed. Every result is
// checked. A node's worker takes up to 16 tasks at once (its pipeline):
// only the tasks beyond what the workers hold wait where the autoscaler
// sees them, so a burst smaller than that runs on the nodes there are.
//
//	go run ./samples/autoscale
//	go run ./samples/autoscale -bursts 4 -tasks 60 -max 4
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// spin burns about d of CPU and returns n.
var spin = atoll.NewFunc2("autoscale.spin", func(_ context.Context, n int, ms int64) (int, error) {
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	x := 0
	for time.Now().Before(end) {
		for i := range 10000 {
			x += i
		}
	}
	_ = x
	return n, nil
})

type options struct {
	bursts, tasks, max int
	work, quiet, idle  time.Duration
	sample             time.Duration
}

func main() {
	ctx := context.Background()
	if atoll.IsWorker() {
		_ = atoll.Init(ctx) // a node or worker process of the cluster: serves, never returns
	}
	opts := options{bursts: 3, tasks: 40, max: 3, work: 300 * time.Millisecond, quiet: 6 * time.Second, idle: 2 * time.Second,
		sample: 250 * time.Millisecond}
	flag.IntVar(&opts.bursts, "bursts", opts.bursts, "bursts of tasks")
	flag.IntVar(&opts.tasks, "tasks", opts.tasks, "tasks of each burst")
	flag.IntVar(&opts.max, "max", opts.max, "most worker nodes the autoscaler may add")
	flag.DurationVar(&opts.work, "work", opts.work, "CPU time of each task")
	flag.DurationVar(&opts.quiet, "quiet", opts.quiet, "time between bursts")
	flag.DurationVar(&opts.idle, "idle", opts.idle, "the cluster file's idle_timeout")
	flag.DurationVar(&opts.sample, "sample", opts.sample, "sampling interval")
	flag.Parse()
	if _, err := run(ctx, opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// sample is the cluster at one moment.
type sample struct {
	at     time.Duration
	nodes  int // alive, the head included, drivers not
	queued int // tasks waiting on every node
}

// summary is what run measured.
type summary struct {
	samples          []sample
	peak             int
	nodeSeconds      float64
	fixedNodeSeconds float64
	wall             time.Duration
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) (summary, error) {
	var sum summary
	if opts.bursts < 1 || opts.tasks < 1 || opts.max < 1 || opts.work <= 0 || opts.quiet < 0 || opts.idle <= 0 || opts.sample <= 0 {
		return sum, errors.New("autoscale: -bursts, -tasks, -max, -work, -idle and -sample positive")
	}
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "autoscale: "+format+"\n", args...) }
	dir, err := os.MkdirTemp("", "atoll-autoscale-")
	if err != nil {
		return sum, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`cluster_name: autoscale-sample
idle_timeout: %v
interval: 250ms
provider:
  type: local
node_types:
  cpu1:
    resources: {CPU: 1}
    max_workers: %d
    object_store_memory: 64MiB
`, opts.idle, opts.max)), 0o600); err != nil {
		return sum, err
	}
	c, err := localcluster.Start(ctx, localcluster.Options{Nodes: 1, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 128 << 20, Autoscaler: file},
		Dir: filepath.Join(dir, "nodes")})
	if err != nil {
		return sum, err
	}
	defer c.Stop()
	if err := atoll.Init(ctx, atoll.WithAddress(c.Address), atoll.WithSecret(c.Secret), atoll.WithObjectStoreMemory(64<<20)); err != nil {
		return sum, err
	}
	defer func() { _ = atoll.Shutdown(context.WithoutCancel(ctx)) }()
	creds := nodeconfig.Credentials{Secret: c.Secret}

	// The sampler: nodes alive and tasks waiting, every opts.sample.
	start := time.Now()
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(opts.sample)
		defer t.Stop()
		for {
			if st, err := clusterclient.GetStatus(ctx, c.Address, creds); err == nil {
				s := sample{at: time.Since(start)}
				for _, n := range st.Nodes {
					if !n.Alive {
						continue
					}
					s.queued += n.Queued
					if !n.Driver {
						s.nodes++
					}
				}
				mu.Lock()
				sum.samples = append(sum.samples, s)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()

	for b := range opts.bursts {
		progress("burst %d: %d tasks of %v", b+1, opts.tasks, opts.work)
		refs := make([]atoll.ObjectRef[int], opts.tasks)
		for i := range refs {
			refs[i] = spin.Remote(ctx, atoll.Value(i), atoll.Value(opts.work.Milliseconds()))
		}
		got, err := atoll.GetAll(ctx, refs)
		if err != nil {
			return sum, err
		}
		for i, v := range got {
			if v != i {
				return sum, fmt.Errorf("autoscale: task %d returned %d", i, v)
			}
		}
		progress("burst %d done after %v; quiet for %v", b+1, time.Since(start).Round(100*time.Millisecond), opts.quiet)
		if b < opts.bursts-1 {
			select {
			case <-time.After(opts.quiet):
			case <-ctx.Done():
				return sum, ctx.Err()
			}
		}
	}
	// The end: back to the head alone.
	progress("waiting for the workers to be removed")
	deadline := time.Now().Add(2*opts.idle + time.Minute)
	for {
		mu.Lock()
		last := sample{nodes: -1}
		if len(sum.samples) > 0 {
			last = sum.samples[len(sum.samples)-1]
		}
		mu.Unlock()
		if last.nodes == 1 {
			break
		}
		if time.Now().After(deadline) {
			return sum, fmt.Errorf("autoscale: %d nodes still alive %v after the last burst", last.nodes, 2*opts.idle+time.Minute)
		}
		select {
		case <-time.After(opts.sample):
		case <-ctx.Done():
			return sum, ctx.Err()
		}
	}
	close(stop)
	<-done
	sum.wall = time.Since(start)
	summarize(&sum)
	plot(stdout, sum)
	return sum, nil
}

// summarize integrates the nodes alive over time (each sample holds until
// the next) and sizes the fixed cluster at the peak.
func summarize(s *summary) {
	for i, x := range s.samples {
		s.peak = max(s.peak, x.nodes)
		next := s.wall
		if i+1 < len(s.samples) {
			next = s.samples[i+1].at
		}
		s.nodeSeconds += float64(x.nodes) * (next - x.at).Seconds()
	}
	if len(s.samples) > 0 {
		s.fixedNodeSeconds = float64(s.peak) * (s.wall - s.samples[0].at).Seconds()
	}
}

// plot prints one line per sample (merged to about 60 lines): the time,
// the nodes as '#' and the tasks waiting as '.', then the totals.
func plot(w io.Writer, s summary) {
	step := max(1, len(s.samples)/60)
	fmt.Fprintf(w, "%7s %5s %6s  nodes (#) and tasks waiting (.)\n", "time", "nodes", "queued")
	for i := 0; i < len(s.samples); i += step {
		x := s.samples[i]
		fmt.Fprintf(w, "%6.1fs %5d %6d  %s%s\n", x.at.Seconds(), x.nodes, x.queued, strings.Repeat("#", x.nodes), strings.Repeat(".", x.queued))
	}
	fmt.Fprintf(w, "peak %d nodes; %.1f node-seconds autoscaled against %.1f for a fixed cluster of %d nodes over the same %.1fs (%.0f%%)\n",
		s.peak, s.nodeSeconds, s.fixedNodeSeconds, s.peak, s.wall.Seconds(), 100*s.nodeSeconds/max(s.fixedNodeSeconds, 1e-9))
}
