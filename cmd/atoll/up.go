package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/autoscaler"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// downTimeout is how long `atoll down` gives the autoscaler to drain and
// stop the nodes it launched, by default.
const downTimeout = 2 * time.Minute

func newUpCmd() *cobra.Command {
	var block bool
	cmd := &cobra.Command{
		Use:   "up FILE [--block] [-- START FLAGS...]",
		Short: "Start a cluster from a cluster file: a head running the autoscaler",
		Long: `Reads the cluster file FILE (YAML: node types with their resources and
min/max workers, the upscaling speed, the idle timeout, the provider that
launches nodes, the head's settings) and starts a head on this machine
that runs the autoscaler with it, as 'atoll start --head --autoscaler FILE'
does. The autoscaler adds nodes of the file's types while work waits
(tasks, actors, placement groups, request_resources) and removes nodes
idle past the idle timeout, draining them first. 'atoll status' shows
what it waits for and its decisions; 'atoll down FILE' stops it all.

Flags after -- go to 'atoll start' as they are (they win over the file's
head settings), e.g. -- --port 0 --dashboard-port 0.`,
		Example: "  atoll up cluster.yaml\n  atoll up cluster.yaml -- --port 0 --gossip-port 0\n  atoll status\n  atoll down cluster.yaml",
		Args: func(cmd *cobra.Command, a []string) error {
			if dash := cmd.ArgsLenAtDash(); (dash < 0 && len(a) != 1) || (dash >= 0 && dash != 1) {
				return args(1, "FILE")(cmd, a)
			}
			return nil
		},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			argv, err := upArgs(a[0])
			if err != nil {
				return err
			}
			argv = append(argv, a[1:]...)
			if block {
				argv = append(argv, "--block")
			}
			start, _ := startCommand()
			start.SetArgs(argv)
			start.SetOut(cmd.OutOrStdout())
			start.SetErr(cmd.ErrOrStderr())
			start.SilenceUsage, start.SilenceErrors = true, true
			return start.ExecuteContext(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&block, "block", false, "run the head in the foreground until SIGINT or SIGTERM")
	return cmd
}

// upArgs reads the cluster file and returns the arguments of `atoll
// start` that start its head.
func upArgs(path string) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	file, err := autoscaler.ReadClusterFile(abs)
	if err != nil {
		return nil, errs.Invalidf("%v", err)
	}
	argv := []string{"--head", "--autoscaler=" + abs}
	h := file.Head
	if h.NumCPUs != nil {
		argv = append(argv, "--num-cpus="+strconv.FormatFloat(*h.NumCPUs, 'g', -1, 64))
	}
	if len(h.Resources) > 0 {
		b, err := json.Marshal(h.Resources)
		if err != nil {
			return nil, err
		}
		argv = append(argv, "--resources="+string(b))
	}
	if h.ObjectStoreMemory > 0 {
		argv = append(argv, "--object-store-memory="+strconv.FormatUint(uint64(h.ObjectStoreMemory), 10))
	}
	if h.Port > 0 {
		argv = append(argv, "--port="+strconv.Itoa(h.Port))
	}
	if h.DashboardPort > 0 {
		argv = append(argv, "--dashboard-port="+strconv.Itoa(h.DashboardPort))
	}
	return argv, nil
}

func newDownCmd() *cobra.Command {
	var q clusterQuery
	timeout := downTimeout
	cmd := &cobra.Command{
		Use:   "down FILE [--address HOST:PORT] [--timeout 2m]",
		Short: "Stop a cluster 'atoll up FILE' started: its autoscaled nodes, then the nodes of this machine",
		Long: `Asks the head's autoscaler to stop scaling and to stop every node it
launched (waiting up to --timeout), then stops the nodes 'atoll start'
and 'atoll up' started on this machine, the head last, as 'atoll stop'
does. FILE is the cluster file the cluster was started with (checked, so
that a wrong file is noticed).`,
		Args:                  args(1),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			if _, err := autoscaler.ReadClusterFile(a[0]); err != nil {
				return errs.Invalidf("%v", err)
			}
			if timeout <= 0 {
				return errs.Invalidf("--timeout %v: want a positive duration, e.g. 2m", timeout)
			}
			address := q.address
			if address == "" {
				address = envAddress()
			}
			out := cmd.OutOrStdout()
			if err := downAutoscaled(cmd.Context(), out, address, timeout); err != nil {
				return err
			}
			n, err := stopNodes(cmd.Context(), cmd.ErrOrStderr(), false, 30*time.Second)
			fmt.Fprintf(out, "stopped %d atoll node(s)\n", n)
			return err
		},
	}
	q.addFlag(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", downTimeout, "how long the autoscaler gets to drain and stop its nodes")
	return cmd
}

// downAutoscaled asks the autoscaler of the cluster at address to stop
// its nodes; a cluster without one (or none reachable) is no error.
func downAutoscaled(ctx context.Context, out io.Writer, address string, timeout time.Duration) error {
	nc, _, err := clusterclient.Dial(address, "atoll-down", nodeconfig.Credentials{})
	if err != nil {
		fmt.Fprintf(out, "no cluster to ask (%v): stopping the nodes of this machine\n", err)
		return nil
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n, err := clusterclient.ShutdownAutoscaler(ctx, nc)
	switch {
	case errors.Is(err, clusterclient.ErrNoAutoscaler):
		fmt.Fprintln(out, "the cluster runs no autoscaler")
		return nil
	case err != nil:
		return fmt.Errorf("stop the autoscaled nodes: %w", err)
	}
	fmt.Fprintf(out, "the autoscaler stopped %d node(s)\n", n)
	return nil
}

// printAutoscaler writes the autoscaler's part of `atoll status`: its
// node types with their counts, the demand it could not place and its
// last decisions with their reasons (the newest last, at most last).
func printAutoscaler(w io.Writer, st *atollpb.AutoscalerStatus, last int, now time.Time) error {
	fmt.Fprintf(w, "\nautoscaler (%s provider, %d rounds", st.Provider, st.Rounds)
	if st.LastError != "" {
		fmt.Fprintf(w, ", last error: %s", st.LastError)
	}
	fmt.Fprintln(w, ")")
	t := newTable("NODE TYPE", "RESOURCES", "MIN>", "MAX>", "LAUNCHING>", "RUNNING>", "DRAINING>")
	for _, nt := range st.NodeTypes {
		t.add(nt.Name, formatResources(nt.Resources), strconv.Itoa(int(nt.MinWorkers)), strconv.Itoa(int(nt.MaxWorkers)),
			strconv.Itoa(int(nt.Launching)), strconv.Itoa(int(nt.Running)), strconv.Itoa(int(nt.Draining)))
	}
	if err := t.write(w); err != nil {
		return err
	}
	if len(st.Demands) == 0 {
		fmt.Fprintln(w, "pending demand: none")
	} else {
		fmt.Fprintln(w, "pending demand:")
		for _, d := range st.Demands {
			what := "waits"
			if d.Infeasible {
				what = "INFEASIBLE"
			}
			fmt.Fprintf(w, "  %d x %s from %s: %s (%s)\n", d.Count, formatResources(d.Resources), d.Source, what, d.Reason)
		}
	}
	ds := st.Decisions
	if len(ds) > last {
		ds = ds[len(ds)-last:]
	}
	if len(ds) > 0 {
		fmt.Fprintln(w, "last decisions:")
	}
	for _, d := range ds {
		ago := now.Sub(time.UnixMilli(d.UnixMs)).Round(time.Second)
		var subject []string
		if d.Count > 0 {
			subject = append(subject, strconv.Itoa(int(d.Count)))
		}
		for _, s := range []string{d.NodeType, d.InstanceId} {
			if s != "" {
				subject = append(subject, s)
			}
		}
		fmt.Fprintf(w, "  %s ago  %-10s %s: %s\n", ago, d.Action, strings.Join(subject, " "), d.Reason)
	}
	return nil
}

// formatResources writes resources as NAME=N,... sorted by name.
func formatResources(r map[string]float64) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.FormatFloat(r[k], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}
