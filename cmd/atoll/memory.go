package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/memsample"
)

func newMemoryCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	var sf sampleFlags
	cmd := &cobra.Command{
		Use:   "memory [--address HOST:PORT] [--json] [--sample INTERVAL -o FILE [--duration D]]",
		Short: "Show every node's object store: use, pins, objects, spilling, transfers; or sample it over time",
		Long: `Shows, for every live node of the cluster at --address (default $` + nodeconfig.EnvAddress + `, then
the address the local head recorded), its object store as its last load
report described it: bytes used of the capacity, pinned bytes, objects,
bytes and files spilled to disk now, bytes spilled and restored so far,
and the objects and bytes it pulled from other nodes.

With --sample INTERVAL it samples instead: every INTERVAL (e.g. 100ms, 1s;
nodes report every 100 ms) the bytes each live node's store uses and
their sum, the cluster total, until Ctrl-C or until --duration has passed.
It prints the sample count and the current total to standard error every
5 s, then writes -o FILE: FILE.csv writes the samples as CSV (seconds, one
column per node, empty where the node was absent, total) and the plot
next to it as FILE.svg; FILE.svg writes only the plot (one line per node,
a thicker one for the total, with each line's peak in the legend). Nodes
that join while it samples get a column; nodes that die or leave drop
out. Its memory is bounded: past 2^20 samples (fewer with hundreds of
nodes), pairs of samples merge into one that keeps the maximum of each
value, so peaks stay exact.`,
		Args:                  args(0),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sampling, err := sf.check(cmd, asJSON)
			if err != nil {
				return err
			}
			if sampling {
				address := q.address
				if address == "" {
					address = envAddress()
				}
				return runSample(cmd, address, sf)
			}
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			st, err := clusterclient.GetStatus(ctx, address, nodeconfig.Credentials{})
			if err != nil {
				return err
			}
			return printMemory(cmd.OutOrStdout(), st, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the nodes' memory (and the total) as one JSON document")
	sf.addFlags(cmd)
	return cmd
}

// memoryRow is one node's line of `atoll memory --json`.
type memoryRow struct {
	NodeID        string `json:"node_id,omitempty"`
	Role          string `json:"role,omitempty"`
	UsedBytes     uint64 `json:"used_bytes"`
	CapacityBytes uint64 `json:"capacity_bytes"`
	PinnedBytes   uint64 `json:"pinned_bytes"`
	Objects       uint64 `json:"objects"`
	SpilledBytes  uint64 `json:"spilled_bytes"`
	SpillFiles    uint64 `json:"spill_files"`
	SpilledTotal  uint64 `json:"spilled_bytes_total"`
	RestoredTotal uint64 `json:"restored_bytes_total"`
	Pulls         uint64 `json:"pulls"`
	PulledBytes   uint64 `json:"pulled_bytes"`
}

func printMemory(w io.Writer, st *clusterclient.Status, asJSON bool) error {
	var rows []memoryRow
	var total memoryRow
	for _, n := range st.Nodes {
		if !n.Alive || !n.Reporting {
			continue
		}
		r := memoryRow{NodeID: n.NodeID, Role: role(n), UsedBytes: n.StoreUsed, CapacityBytes: n.StoreCap, PinnedBytes: n.PinnedBytes,
			Objects: n.Objects, SpilledBytes: n.SpilledBytes, SpillFiles: n.SpillFiles, SpilledTotal: n.SpilledTotal,
			RestoredTotal: n.RestoredTotal, Pulls: n.Pulls, PulledBytes: n.PulledBytes}
		rows = append(rows, r)
		total.UsedBytes += r.UsedBytes
		total.CapacityBytes += r.CapacityBytes
		total.PinnedBytes += r.PinnedBytes
		total.Objects += r.Objects
		total.SpilledBytes += r.SpilledBytes
		total.SpillFiles += r.SpillFiles
		total.SpilledTotal += r.SpilledTotal
		total.RestoredTotal += r.RestoredTotal
		total.Pulls += r.Pulls
		total.PulledBytes += r.PulledBytes
	}
	slices.SortStableFunc(rows, func(a, b memoryRow) int { return compareNodes(a.Role, true, a.NodeID, b.Role, true, b.NodeID) })
	if asJSON {
		if rows == nil {
			rows = []memoryRow{}
		}
		total.NodeID, total.Role = "", ""
		return writeJSON(w, map[string]any{"nodes": rows, "total": total})
	}
	t := newTable("NODE", "ROLE", "USED>", "CAPACITY>", "PINNED>", "OBJECTS>", "SPILLED NOW>", "FILES>", "SPILLED TOTAL>", "RESTORED TOTAL>", "PULLS>", "PULLED>")
	line := func(id, role string, r memoryRow) {
		t.add(id, role, humanBytes(r.UsedBytes), humanBytes(r.CapacityBytes), humanBytes(r.PinnedBytes), strconv.FormatUint(r.Objects, 10),
			humanBytes(r.SpilledBytes), strconv.FormatUint(r.SpillFiles, 10), humanBytes(r.SpilledTotal), humanBytes(r.RestoredTotal),
			strconv.FormatUint(r.Pulls, 10), humanBytes(r.PulledBytes))
	}
	for _, r := range rows {
		line(shortID(r.NodeID), r.Role, r)
	}
	if len(rows) > 1 {
		line("total", "", total)
	}
	return t.write(w)
}

func roleOrder(role string) int {
	switch role {
	case "head":
		return 0
	case "worker":
		return 1
	}
	return 2
}

// sampleProgressEvery is how often `atoll memory --sample` reports its
// progress.
const sampleProgressEvery = 5 * time.Second

// sampleFlags are the flags of `atoll memory --sample`.
type sampleFlags struct {
	interval time.Duration
	output   string
	duration time.Duration
}

func (f *sampleFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.interval, "sample", 0, "sample the nodes' store use every `INTERVAL` (e.g. 100ms) and write it to -o FILE")
	fl.StringVarP(&f.output, "output", "o", "", "with --sample: write the samples to `FILE`.csv (and the plot to FILE.svg) or the plot to FILE.svg")
	fl.DurationVar(&f.duration, "duration", 0, "with --sample: stop after `D` (default: at Ctrl-C)")
}

// check validates the flags and reports whether they ask for sampling.
func (f *sampleFlags) check(cmd *cobra.Command, asJSON bool) (bool, error) {
	fl := cmd.Flags()
	if !fl.Changed("sample") {
		if fl.Changed("output") || fl.Changed("duration") {
			return false, errs.Invalidf("-o and --duration need --sample INTERVAL")
		}
		return false, nil
	}
	switch {
	case f.interval <= 0:
		return false, errs.Invalidf("--sample %v: want a positive interval", f.interval)
	case asJSON:
		return false, errs.Invalidf("--json and --sample conflict (--sample writes CSV or SVG to -o FILE)")
	case f.output == "":
		return false, errs.Invalidf("--sample needs -o FILE (.csv or .svg)")
	case f.duration < 0:
		return false, errs.Invalidf("--duration %v: must not be negative", f.duration)
	}
	if _, err := sampleOutputs(f.output); err != nil {
		return false, err
	}
	return true, nil
}

// sampleOutput is one file `atoll memory --sample` writes.
type sampleOutput struct {
	path string
	svg  bool
}

// sampleOutputs are the files -o FILE asks for: FILE.csv and FILE.svg
// next to it, or only FILE.svg.
func sampleOutputs(file string) ([]sampleOutput, error) {
	ext := filepath.Ext(file)
	base := strings.TrimSuffix(file, ext)
	if base == "" || strings.HasSuffix(base, string(filepath.Separator)) {
		return nil, errs.Invalidf("-o %q: want a file name", file)
	}
	switch strings.ToLower(ext) {
	case ".csv":
		return []sampleOutput{{file, false}, {base + ".svg", true}}, nil
	case ".svg":
		return []sampleOutput{{file, true}}, nil
	}
	return nil, errs.Invalidf("-o %q: want a .csv or .svg file", file)
}

// runSample samples the cluster at address until Ctrl-C (the command's
// context) or f.duration, reporting progress to standard error, then
// writes the files.
func runSample(cmd *cobra.Command, address string, f sampleFlags) error {
	outputs, err := sampleOutputs(f.output)
	if err != nil {
		return err
	}
	nc, url, err := clusterclient.Dial(address, "atoll-memory", nodeconfig.Credentials{})
	if err != nil {
		return err
	}
	defer nc.Close()
	s, err := memsample.New(nc, memsample.Options{Interval: f.interval})
	if err != nil {
		return err
	}
	if err := s.Start(cmd.Context()); err != nil {
		return err
	}
	defer s.Stop()
	errOut := cmd.ErrOrStderr()
	paths := make([]string, len(outputs))
	for i, o := range outputs {
		paths[i] = o.path
	}
	until := "Ctrl-C"
	var stop <-chan time.Time
	if f.duration > 0 {
		until = f.duration.String() + " (or Ctrl-C)"
		timer := time.NewTimer(f.duration)
		defer timer.Stop()
		stop = timer.C
	}
	p := s.Progress()
	fmt.Fprintf(errOut, "sampling the object stores of %s of cluster %s every %v; writing %s after %s\n",
		plural(p.Nodes, "node", "nodes"), displayAddress(url), f.interval, strings.Join(paths, " and "), until)
	progress := time.NewTicker(sampleProgressEvery)
	defer progress.Stop()
	lost := false
wait:
	for {
		select {
		case <-stop:
			break wait
		case <-s.Done(): // Ctrl-C, or the connection closed
			lost = cmd.Context().Err() == nil
			break wait
		case <-progress.C:
			p := s.Progress()
			fmt.Fprintf(errOut, "%s in %s: %s, cluster total %s (peak %s)\n", plural(int(p.Ticks), "sample", "samples"),
				p.Elapsed.Round(time.Second), plural(p.Nodes, "node", "nodes"), humanBytes(p.Total), humanBytes(p.Peak))
		}
	}
	samples := s.Stop()
	title := "Object store use, cluster " + displayAddress(url) + ", " + samples.Start.Format("2006-01-02 15:04:05")
	for _, o := range outputs {
		if err := writeSamples(o, samples, title); err != nil {
			return err
		}
	}
	peak := samples.Peak()
	fmt.Fprintf(errOut, "wrote %s of %s to %s; peak cluster total %s at %.1fs\n", plural(len(samples.Times), "sample", "samples"),
		plural(len(samples.Nodes), "node", "nodes"), strings.Join(paths, " and "), humanBytes(peak.Bytes), peak.At.Seconds())
	if lost {
		return errs.Unavailablef("lost the connection to the cluster at %s", displayAddress(url))
	}
	return nil
}

// writeSamples writes one output file.
func writeSamples(o sampleOutput, samples *memsample.Samples, title string) error {
	file, err := os.Create(o.path)
	if err != nil {
		return err
	}
	if o.svg {
		err = samples.WriteSVG(file, memsample.SVGOptions{Title: title})
	} else {
		err = samples.WriteCSV(file)
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	return nil
}
