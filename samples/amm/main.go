// Command amm measures the Active Memory Manager as Dask's documentation
// does (peak cluster-wide memory with the AMM on and off, same wall time)
// on a local cluster of node processes.
//
// The workload is a working set read by every node in turn: each phase
// makes one block (a task on one node, SPREAD over the phases), then
// tasks on every node read it (each node pulls a copy) and check its
// checksum, and the block stays referenced to the end, as a cached
// dataset would. Without the AMM every pulled copy stays while its block
// lives: the cluster holds each block once per node. With it on, the
// copies no reader needs go within a round or two (ReduceReplicas), while
// later phases run. Each run starts a fresh cluster; runs alternate
// (off, on, on, off, ...), and the medians are reported.
//
//	go run ./samples/amm -json
//	go run ./samples/amm -phases 12 -size 32MiB -out /tmp/amm   # also CSV and SVG per run
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
	"runtime"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/memsample"
)

// block is phase p's data: n bytes from a fixed generator.
func block(p, n int) []byte {
	b := make([]byte, n)
	x := uint32(p)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// checksum is the readers' work: passes sums over the bytes.
func checksum(b []byte, passes int) uint64 {
	var s uint64
	for range passes {
		s = 0
		for _, x := range b {
			s = s*31 + uint64(x)
		}
	}
	return s
}

var (
	makeBlock = atoll.NewFunc2("amm.makeBlock", func(_ context.Context, p, n int) ([]byte, error) { return block(p, n), nil })
	nodeOf    = atoll.NewFunc1("amm.nodeOf", func(_ context.Context, _ int) (string, error) { return atoll.CurrentNodeID(), nil })
	readBlock = atoll.NewFunc2("amm.readBlock", func(_ context.Context, b []byte, passes int) (uint64, error) {
		return checksum(b, passes), nil
	})
)

type options struct {
	nodes   int
	cpus    float64
	store   benchfmt.Size
	phases  int
	size    benchfmt.Size
	readers int
	passes  int
	rounds  int
	sample  time.Duration
	out     string
	json    bool
}

func main() {
	ctx := context.Background()
	if atoll.IsWorker() {
		_ = atoll.Init(ctx) // a node or worker process of the cluster: serves, never returns
	}
	opts := options{nodes: 3, cpus: 2, store: benchfmt.Size(1 << 30), phases: 12, size: benchfmt.Size(32 << 20),
		readers: 2, passes: 2, rounds: 2, sample: 100 * time.Millisecond}
	flag.IntVar(&opts.nodes, "nodes", opts.nodes, "nodes of the local cluster")
	flag.Float64Var(&opts.cpus, "cpus", opts.cpus, "CPU slots of each node")
	flag.Var(&opts.store, "store", "object store memory of each node")
	flag.IntVar(&opts.phases, "phases", opts.phases, "blocks made, each read on every node")
	flag.Var(&opts.size, "size", "bytes of each block")
	flag.IntVar(&opts.readers, "readers", opts.readers, "reading tasks per node and block")
	flag.IntVar(&opts.passes, "passes", opts.passes, "checksum passes of each reading task (its work)")
	flag.IntVar(&opts.rounds, "rounds", opts.rounds, "runs of each mode (alternating: off, on, on, off, ...); medians are reported")
	flag.DurationVar(&opts.sample, "sample", opts.sample, "memory sampling interval")
	flag.StringVar(&opts.out, "out", "", "directory for each run's memory samples (CSV) and plot (SVG); none if empty")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per measurement (progress goes to stderr)")
	flag.Parse()
	if err := run(ctx, opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// result is one run's measurements.
type result struct {
	wall     time.Duration
	peak     uint64 // cluster-wide store use, bytes
	peakNode uint64 // the largest node's peak
	dropped  uint64 // copies the AMM dropped
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	if opts.nodes < 2 || opts.phases < 1 || opts.size <= 0 || opts.readers < 1 || opts.passes < 1 || opts.rounds < 1 || opts.sample <= 0 {
		return errors.New("amm: -nodes at least 2; -phases, -size, -readers, -passes, -rounds and -sample positive")
	}
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "amm: "+format+"\n", args...) }
	if opts.out != "" {
		if err := os.MkdirAll(opts.out, 0o755); err != nil {
			return err
		}
	}
	res := map[bool][]result{}
	for i := range 2 * opts.rounds {
		on := i%2 == 1 != (i/2%2 == 1) // off, on, on, off, off, on, ...: neither mode always goes first
		progress("run %d/%d: AMM %s, %d nodes, %d blocks of %s, each read by %d tasks per node", i+1, 2*opts.rounds,
			onOff(on), opts.nodes, opts.phases, benchfmt.FormatSize(int64(opts.size)), opts.readers)
		r, err := once(ctx, opts, on, fmt.Sprintf("amm-%s-%d", onOff(on), i/2+1), progress)
		if err != nil {
			return err
		}
		progress("  wall %.2fs, peak cluster store use %s (largest node %s), copies dropped %d", r.wall.Seconds(),
			benchfmt.FormatSize(int64(r.peak)), benchfmt.FormatSize(int64(r.peakNode)), r.dropped)
		res[on] = append(res[on], r)
	}
	off, on := medianOf(res[false]), medianOf(res[true])
	config := map[string]any{
		"nodes": opts.nodes, "cpus_per_node": opts.cpus, "store_bytes_per_node": int64(opts.store), "phases": opts.phases,
		"block_bytes": int64(opts.size), "readers_per_node": opts.readers, "passes": opts.passes, "rounds": opts.rounds,
		"statistic": "median", "amm_interval": cluster.DefaultAMMInterval.String(), "sample_interval": opts.sample.String(),
		"atoll_version": benchfmt.Version(), "go": runtime.Version(), "cpus": runtime.NumCPU(),
	}
	records := []benchfmt.Record{
		benchfmt.NewRecord("amm", "peak_cluster_store_bytes", float64(on.peak), "bytes", "amm_off_peak_cluster_store_bytes", float64(off.peak), config).WithVerified(true),
		benchfmt.NewRecord("amm", "peak_node_store_bytes", float64(on.peakNode), "bytes", "amm_off_peak_node_store_bytes", float64(off.peakNode), config),
		benchfmt.NewRecord("amm", "wall_s", on.wall.Seconds(), "s", "amm_off_wall_s", off.wall.Seconds(), config).WithVerified(true),
	}
	if opts.json {
		return benchfmt.WriteAll(stdout, records)
	}
	fmt.Fprintf(stdout, "AMM off: peak cluster store use %s, wall %.2fs\n", benchfmt.FormatSize(int64(off.peak)), off.wall.Seconds())
	fmt.Fprintf(stdout, "AMM on:  peak cluster store use %s (%.0f%% lower), wall %.2fs (%+.1f%%)\n", benchfmt.FormatSize(int64(on.peak)),
		100*(1-float64(on.peak)/float64(off.peak)), on.wall.Seconds(), 100*(on.wall.Seconds()/off.wall.Seconds()-1))
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// once starts a cluster (AMM on or off), runs the workload under the
// memory sampler, verifies it and stops the cluster.
func once(ctx context.Context, opts options, on bool, name string, progress func(string, ...any)) (result, error) {
	env := []string{cluster.EnvAMM + "=" + fmt.Sprint(on)}
	c, err := localcluster.Start(ctx, localcluster.Options{Nodes: opts.nodes, Node: nodeconfig.Config{NumCPUs: opts.cpus, ObjectStoreMemory: uint64(opts.store)}, Env: env})
	if err != nil {
		return result{}, err
	}
	defer c.Stop()
	if err := atoll.Init(ctx, atoll.WithAddress(c.Address), atoll.WithSecret(c.Secret), atoll.WithObjectStoreMemory(64<<20)); err != nil {
		return result{}, err
	}
	defer func() { _ = atoll.Shutdown(context.WithoutCancel(ctx)) }()
	if err := waitForNodes(ctx, opts.nodes); err != nil {
		return result{}, err
	}
	s, err := atolltest.SampleMemory(ctx, opts.sample)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	err = workload(ctx, opts, progress)
	wall := time.Since(start)
	samples := s.Stop()
	if err != nil {
		return result{}, err
	}
	r := result{wall: wall, peak: samples.Peak().Bytes}
	for i := range samples.Nodes {
		r.peakNode = max(r.peakNode, samples.Nodes[i].Peak(samples.Times).Bytes)
	}
	if st, err := atolltest.GetAMMStatus(ctx); err == nil {
		r.dropped = st.Dropped
	}
	if opts.out != "" {
		if err := writeSamples(samples, filepath.Join(opts.out, name), fmt.Sprintf("AMM %s: %d blocks of %s read on %d nodes",
			onOff(on), opts.phases, benchfmt.FormatSize(int64(opts.size)), opts.nodes)); err != nil {
			return result{}, err
		}
	}
	return r, nil
}

// waitForNodes waits until SPREAD tasks reach every node (until then the
// driver's view of the cluster is not complete).
func waitForNodes(ctx context.Context, nodes int) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		refs := make([]atoll.ObjectRef[string], 3*nodes)
		for i := range refs {
			refs[i] = nodeOf.Remote(ctx, atoll.Value(i), atoll.Spread())
		}
		got, err := atoll.GetAll(ctx, refs)
		if err != nil {
			return err
		}
		slices.Sort(got)
		if len(slices.Compact(got)) == nodes {
			return nil
		}
	}
	return errors.New("amm: the cluster's nodes did not all join within a minute")
}

// workload runs the phases and verifies every read.
func workload(ctx context.Context, opts options, progress func(string, ...any)) error {
	n := int(opts.size)
	working := make([]atoll.ObjectRef[[]byte], 0, opts.phases)
	for p := range opts.phases {
		b := makeBlock.Remote(ctx, atoll.Value(p), atoll.Value(n), atoll.Spread())
		working = append(working, b)
		want := checksum(block(p, n), opts.passes)
		reads := make([]atoll.ObjectRef[uint64], opts.readers*opts.nodes)
		for i := range reads {
			reads[i] = readBlock.Remote(ctx, b, atoll.Value(opts.passes), atoll.Spread())
		}
		sums, err := atoll.GetAll(ctx, reads)
		if err != nil {
			return fmt.Errorf("phase %d: %w", p, err)
		}
		for _, s := range sums {
			if s != want {
				return fmt.Errorf("phase %d: a reader's checksum %x, want %x", p, s, want)
			}
		}
	}
	// The working set lived to the end: every block still reads right (a
	// task where a copy is; the driver's own store stays small).
	finals := make([]atoll.ObjectRef[uint64], len(working))
	for p, b := range working {
		finals[p] = readBlock.Remote(ctx, b, atoll.Value(1))
	}
	sums, err := atoll.GetAll(ctx, finals)
	if err != nil {
		return fmt.Errorf("the blocks at the end: %w", err)
	}
	for p, s := range sums {
		if s != checksum(block(p, n), 1) {
			return fmt.Errorf("block %d at the end: wrong bytes", p)
		}
	}
	return nil
}

func writeSamples(s *memsample.Samples, base, title string) error {
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{
		{".csv", s.WriteCSV},
		{".svg", func(w io.Writer) error { return s.WriteSVG(w, memsample.SVGOptions{Title: title}) }},
	} {
		file, err := os.Create(base + f.ext)
		if err != nil {
			return err
		}
		err = f.write(file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// medianOf returns the median of each measurement.
func medianOf(rs []result) result {
	med := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return result{
		wall:     time.Duration(med(func(r result) float64 { return float64(r.wall) })),
		peak:     uint64(med(func(r result) float64 { return float64(r.peak) })),
		peakNode: uint64(med(func(r result) float64 { return float64(r.peakNode) })),
		dropped:  uint64(med(func(r result) float64 { return float64(r.dropped) })),
	}
}
