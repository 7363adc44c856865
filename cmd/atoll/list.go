package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/node"
)

func newListCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list nodes|actors|jobs [--address HOST:PORT] [--json]",
		Short: "List the cluster's nodes, actors or jobs from the GCS",
		Long: `Lists what the GCS of the cluster at --address (default $` + node.EnvAddress + `, then the
address the local head recorded) knows: every node (dead ones included),
every actor (state, node, restarts, death cause) or every job (driver
binary, start and end).`,
		Args:                  cobra.ExactArgs(1),
		ValidArgs:             []string{"nodes", "actors", "jobs"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			if kind != "nodes" && kind != "actors" && kind != "jobs" {
				return errs.Invalidf("list %q: want nodes, actors or jobs", kind)
			}
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			return list(ctx, cmd.OutOrStdout(), address, kind, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	return cmd
}

func list(ctx context.Context, w io.Writer, address, kind string, asJSON bool) error {
	var rows []proto.Message
	switch kind {
	case "nodes":
		nodes, err := node.ListNodes(ctx, address, node.Credentials{})
		if err != nil {
			return err
		}
		for _, n := range nodes {
			rows = append(rows, n)
		}
	case "actors":
		actors, err := node.ListActors(ctx, address, node.Credentials{})
		if err != nil {
			return err
		}
		for _, a := range actors {
			rows = append(rows, a)
		}
	case "jobs":
		jobs, err := node.ListJobs(ctx, address, node.Credentials{})
		if err != nil {
			return err
		}
		for _, j := range jobs {
			rows = append(rows, j)
		}
	}
	if asJSON {
		for _, r := range rows {
			b, err := protojson.Marshal(r)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		}
		return nil
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "no %s\n", kind)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch kind {
	case "nodes":
		fmt.Fprintln(tw, "NODE\tROLE\tSTATE\tHOST\tRESOURCES\tOBJECT STORE\tTRANSFER\tSTARTED\tENDED")
		for _, r := range rows {
			n := r.(*atollpb.NodeInfo)
			role := "worker"
			switch {
			case n.IsHead:
				role = "head"
			case n.IsDriver:
				role = "driver"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shortID(hex.EncodeToString(n.NodeId)), role,
				strings.TrimPrefix(n.State.String(), "NODE_"), orDash(n.Hostname), resources(n.Resources),
				humanBytes(n.ObjectStoreBytes), orDash(n.TransferAddress), when(n.StartTimeUnixMs), when(n.EndTimeUnixMs))
		}
	case "actors":
		fmt.Fprintln(tw, "ACTOR\tNAME\tTYPE\tSTATE\tNODE\tRESTARTS\tDEATH CAUSE")
		for _, r := range rows {
			a := r.(*atollpb.ActorInfo)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", shortID(hex.EncodeToString(a.ActorId)), orDash(a.Name), a.ActorType,
				strings.TrimPrefix(a.State.String(), "ACTOR_"), orDash(shortID(hex.EncodeToString(a.NodeId))),
				a.NumRestarts, a.MaxRestarts, orDash(a.DeathCause.GetMessage()))
		}
	case "jobs":
		fmt.Fprintln(tw, "JOB\tENTRYPOINT\tSTATE\tSTARTED\tENDED\tWORKER BINARY")
		for _, r := range rows {
			j := r.(*atollpb.JobInfo)
			state := "RUNNING"
			if j.Finished {
				state = "FINISHED"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", shortID(hex.EncodeToString(j.JobId)), orDash(j.Entrypoint), state,
				when(j.StartTimeUnixMs), when(j.EndTimeUnixMs), orDash(j.WorkerBinary))
		}
	}
	return tw.Flush()
}

// resources renders a node's total resources in name order.
func resources(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	names := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(names))
	for i, name := range names {
		if strings.Contains(strings.ToLower(name), "memory") {
			parts[i] = name + " " + humanBytes(uint64(max(m[name], 0)))
		} else {
			parts[i] = name + " " + strconv.FormatFloat(m[name], 'f', -1, 64)
		}
	}
	return strings.Join(parts, ", ")
}

// when renders a Unix time in milliseconds ("-" for none).
func when(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format(time.DateTime)
}
