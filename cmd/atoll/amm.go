package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func newAMMCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	ops := map[string]clusterclient.AMMOp{"status": clusterclient.AMMStatusOnly, "start": clusterclient.AMMStart, "stop": clusterclient.AMMStop}
	cmd := &cobra.Command{
		Use:   "amm start|stop|status [--address HOST:PORT] [--json]",
		Short: "Start, stop or show the head's Active Memory Manager",
		Long: `The Active Memory Manager runs on the cluster's head: every interval (default 2s,
$ATOLL_AMM_INTERVAL) it lists where the copies of objects are and runs its
policies (ReduceReplicas drops the copies no longer needed, Replicate keeps the
replica counts drivers set), without ever dropping an object's last copy, its
primary, or a copy in use. It is off unless the head started with ATOLL_AMM=1;
"start" and "stop" turn its policies on and off on a running cluster (drains,
"atoll drain", go on either way). All three print its status: policies, rounds,
copies dropped and made, and drains under way.`,
		Args:                  args(1, "what to do (start, stop or status)"),
		ValidArgs:             []string{"start", "stop", "status"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			op, ok := ops[args[0]]
			if !ok {
				return &usageErr{err: errs.Invalidf("amm %q: want start, stop or status", args[0]), usage: strings.TrimRight(cmd.UsageString(), "\n")}
			}
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			nc, _, err := clusterclient.Dial(address, "atoll-amm", nodeconfig.Credentials{})
			if err != nil {
				return err
			}
			defer nc.Close()
			st, err := clusterclient.ControlAMM(ctx, nc, op)
			if err != nil {
				return err
			}
			return printAMM(cmd.OutOrStdout(), st, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func printAMM(w io.Writer, st *clusterclient.AMMStatus, asJSON bool) error {
	if asJSON {
		return writeJSON(w, st)
	}
	state := "stopped"
	if st.Enabled {
		state = "running"
	}
	fmt.Fprintf(w, "Active Memory Manager: %s, every %v, policies %s\n", state, st.Interval, strings.Join(st.Policies, ", "))
	fmt.Fprintf(w, "rounds %d; last snapshot: %d nodes, %d objects, %d copies\n", st.Rounds, st.Nodes, st.Objects, st.Copies)
	fmt.Fprintf(w, "copies dropped %d, made %d (no room %d, failed %d), moved %d; objects with a replica count %d\n",
		st.Dropped, st.Replicated, st.ReplicasNoFit, st.ReplicateFailed, st.Moved, st.Tracked)
	if len(st.Refused) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(st.Refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, st.Refused[k]))
		}
		fmt.Fprintf(w, "suggestions refused: %s\n", strings.Join(parts, ", "))
	}
	if len(st.Drains) == 0 {
		return nil
	}
	t := newTable("DRAIN", "SINCE>", "OBJECTS LEFT>", "BYTES LEFT>", "QUEUED>", "RUNNING>", "STATE")
	for _, d := range st.Drains {
		t.add(shortID(d.NodeID), time.Since(d.Start).Round(time.Second).String(), strconv.Itoa(d.ObjectsLeft), humanBytes(d.BytesLeft),
			strconv.Itoa(d.Queued), strconv.Itoa(d.Running), d.State)
	}
	return t.write(w)
}

// drainTimeout is `atoll drain`'s default --timeout.
const drainTimeout = 30 * time.Minute

func newDrainCmd() *cobra.Command {
	var q clusterQuery
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "drain NODE [--address HOST:PORT] [--timeout D]",
		Short: "Move a node's objects and work off it, then remove it from the cluster",
		Long: `Drains the live node whose id starts with NODE (at least 4 hex digits, as
"atoll status" prints them): the node stops taking new tasks (they go to other
nodes), the head's Active Memory Manager copies the objects only it holds to
the other nodes (least loaded first, within their stores' room), its running
tasks finish, and then it leaves the cluster and its process exits. No task
fails and no object is lost; actors it hosts are restarted elsewhere as after
a node failure (within their max restarts). The head and drivers' nodes cannot
be drained. Prints the drain's progress until the node is gone, at most
--timeout (the drain goes on in the cluster if the command stops).`,
		Args:                  args(1, "NODE (a node id or its first digits)"),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return errs.Invalidf("--timeout %v: must be positive", timeout)
			}
			_, _, address := q.begin(cmd)
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			nc, _, err := clusterclient.Dial(address, "atoll-drain", nodeconfig.Credentials{})
			if err != nil {
				return err
			}
			defer nc.Close()
			out := cmd.OutOrStdout()
			var last string
			start := time.Now()
			err = clusterclient.DrainNode(ctx, nc, args[0], func(d clusterclient.DrainStatus) {
				line := drainLine(d, time.Since(start))
				if line != last {
					fmt.Fprintln(out, line)
					last = line
				}
			})
			return err // the head's errors say "drain: node ...", ResolveNode's name the prefix
		},
	}
	q.addFlag(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", drainTimeout, "give up waiting after this long")
	return cmd
}

// drainLine is `atoll drain`'s progress line for d, after elapsed.
func drainLine(d clusterclient.DrainStatus, elapsed time.Duration) string {
	switch d.State {
	case "left":
		return fmt.Sprintf("node %s drained and left the cluster in %v", shortID(d.NodeID), elapsed.Round(10*time.Millisecond))
	case "counting objects":
		return fmt.Sprintf("node %s: counting the objects to move", shortID(d.NodeID))
	}
	return fmt.Sprintf("node %s: %s; %d objects (%s) to move, %d tasks queued, %d running",
		shortID(d.NodeID), d.State, d.ObjectsLeft, humanBytes(d.BytesLeft), d.Queued, d.Running)
}
