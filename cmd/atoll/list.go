package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func newListCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list nodes|actors|jobs [--address HOST:PORT] [--json]",
		Short: "List the cluster's nodes, actors or jobs from the GCS",
		Long: `Lists what the GCS of the cluster at --address (default $` + nodeconfig.EnvAddress + `, then the
address the local head recorded) knows: every node (dead ones included),
every actor (state, node, restarts, death cause) or every job (drivers' own
jobs and submitted ones: state, start and end).`,
		Args:                  args(1, "what to list (nodes, actors or jobs)"),
		ValidArgs:             []string{"nodes", "actors", "jobs"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			kind := a[0]
			if kind != "nodes" && kind != "actors" && kind != "jobs" {
				return &usageErr{err: errs.Invalidf("list %q: want nodes, actors or jobs", kind), usage: strings.TrimRight(cmd.UsageString(), "\n")}
			}
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			return list(ctx, cmd.OutOrStdout(), address, kind, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as one JSON document")
	return cmd
}

func list(ctx context.Context, w io.Writer, address, kind string, asJSON bool) error {
	switch kind {
	case "nodes":
		nodes, err := clusterclient.ListNodes(ctx, address, nodeconfig.Credentials{})
		if err != nil {
			return err
		}
		return printNodes(w, nodes, asJSON)
	case "actors":
		actors, err := clusterclient.ListActors(ctx, address, nodeconfig.Credentials{})
		if err != nil {
			return err
		}
		return printActors(w, actors, asJSON)
	}
	jobs, err := clusterclient.ListJobs(ctx, address, nodeconfig.Credentials{})
	if err != nil {
		return err
	}
	return printJobs(w, jobs, asJSON)
}

// nodeRow is a node as `atoll list nodes --json` prints it.
type nodeRow struct {
	NodeID           string             `json:"node_id"`
	Role             string             `json:"role"`
	State            string             `json:"state"`
	Hostname         string             `json:"hostname"`
	Resources        map[string]float64 `json:"resources"`
	ObjectStoreBytes uint64             `json:"object_store_bytes"`
	TransferAddress  string             `json:"transfer_address,omitempty"`
	GossipAddress    string             `json:"gossip_address,omitempty"`
	StartTime        string             `json:"start_time,omitempty"`
	EndTime          string             `json:"end_time,omitempty"`

	startMs, endMs int64
}

// nodeRole is a node's role: head, worker or driver.
func nodeRole(head, driver bool) string {
	switch {
	case head:
		return "head"
	case driver:
		return "driver"
	}
	return "worker"
}

// compareNodes is every node table's order: heads, workers, then
// drivers; alive before dead; then by id.
func compareNodes(roleA string, aliveA bool, idA string, roleB string, aliveB bool, idB string) int {
	if c := cmp.Compare(roleOrder(roleA), roleOrder(roleB)); c != 0 {
		return c
	}
	if aliveA != aliveB {
		if aliveA {
			return -1
		}
		return 1
	}
	return cmp.Compare(idA, idB)
}

func printNodes(w io.Writer, nodes []*atollpb.NodeInfo, asJSON bool) error {
	rows := make([]nodeRow, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, nodeRow{NodeID: hexID(n.NodeId), Role: nodeRole(n.IsHead, n.IsDriver), State: strings.TrimPrefix(n.State.String(), "NODE_"),
			Hostname: n.Hostname, Resources: n.Resources, ObjectStoreBytes: n.ObjectStoreBytes, TransferAddress: n.TransferAddress,
			GossipAddress: n.GossipAddress, StartTime: jsonTime(n.StartTimeUnixMs), EndTime: jsonTime(n.EndTimeUnixMs),
			startMs: n.StartTimeUnixMs, endMs: n.EndTimeUnixMs})
	}
	slices.SortStableFunc(rows, func(a, b nodeRow) int {
		return compareNodes(a.Role, a.State == "ALIVE", a.NodeID, b.Role, b.State == "ALIVE", b.NodeID)
	})
	if asJSON {
		return writeJSON(w, map[string]any{"nodes": rows})
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no nodes")
		return err
	}
	t := newTable("NODE", "ROLE", "STATE", "HOST", "RESOURCES", "OBJECT STORE>", "TRANSFER", "STARTED", "ENDED")
	for _, r := range rows {
		t.add(shortID(r.NodeID), r.Role, r.State, r.Hostname, resources(r.Resources), humanBytes(r.ObjectStoreBytes),
			r.TransferAddress, when(r.startMs), when(r.endMs))
	}
	return t.write(w)
}

// actorRow is an actor as `atoll list actors --json` prints it.
type actorRow struct {
	ActorID     string `json:"actor_id"`
	Name        string `json:"name,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Type        string `json:"type"`
	State       string `json:"state"`
	NodeID      string `json:"node_id,omitempty"`
	JobID       string `json:"job_id,omitempty"`
	NumRestarts int32  `json:"num_restarts"`
	MaxRestarts int32  `json:"max_restarts"`
	DeathCause  string `json:"death_cause,omitempty"`
}

func printActors(w io.Writer, actors []*atollpb.ActorInfo, asJSON bool) error {
	rows := make([]actorRow, 0, len(actors))
	for _, a := range actors {
		rows = append(rows, actorRow{ActorID: hexID(a.ActorId), Name: a.Name, Namespace: a.Namespace, Type: a.ActorType,
			State: strings.TrimPrefix(a.State.String(), "ACTOR_"), NodeID: hexID(a.NodeId), JobID: hexID(a.JobId),
			NumRestarts: a.NumRestarts, MaxRestarts: a.MaxRestarts, DeathCause: a.DeathCause.GetMessage()})
	}
	slices.SortStableFunc(rows, func(a, b actorRow) int { return cmp.Compare(a.ActorID, b.ActorID) })
	if asJSON {
		return writeJSON(w, map[string]any{"actors": rows})
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no actors")
		return err
	}
	t := newTable("ACTOR", "NAME", "TYPE", "STATE", "NODE", "RESTARTS>", "DEATH CAUSE")
	for _, r := range rows {
		t.add(shortID(r.ActorID), r.Name, r.Type, r.State, shortID(r.NodeID), fmt.Sprintf("%d/%d", r.NumRestarts, r.MaxRestarts), r.DeathCause)
	}
	return t.write(w)
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
