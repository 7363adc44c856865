package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/node"
)

func newMemoryCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "memory [--address HOST:PORT] [--json]",
		Short: "Show every node's object store: use, pins, objects, spilling, transfers",
		Long: `Shows, for every live node of the cluster at --address (default $` + node.EnvAddress + `, then
the address the local head recorded), its object store as its last load
report described it: bytes used of the capacity, pinned bytes, objects,
bytes and files spilled to disk now, bytes spilled and restored so far,
and the objects and bytes it pulled from other nodes.`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			st, err := node.GetClusterStatus(ctx, address)
			if err != nil {
				return err
			}
			return printMemory(cmd.OutOrStdout(), st, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the nodes' memory as JSON")
	return cmd
}

// memoryRow is one node's line of `atoll memory --json`.
type memoryRow struct {
	NodeID        string `json:"node_id"`
	Role          string `json:"role"`
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

func printMemory(w io.Writer, st *node.ClusterStatus, asJSON bool) error {
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
	slices.SortStableFunc(rows, func(a, b memoryRow) int { return roleOrder(a.Role) - roleOrder(b.Role) })
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tROLE\tUSED\tCAPACITY\tPINNED\tOBJECTS\tSPILLED NOW\tFILES\tSPILLED TOTAL\tRESTORED TOTAL\tPULLS\tPULLED\t")
	line := func(id, role string, r memoryRow) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%d\t%s\t\n", id, role, humanBytes(r.UsedBytes), humanBytes(r.CapacityBytes),
			humanBytes(r.PinnedBytes), r.Objects, humanBytes(r.SpilledBytes), r.SpillFiles, humanBytes(r.SpilledTotal),
			humanBytes(r.RestoredTotal), r.Pulls, humanBytes(r.PulledBytes))
	}
	for _, r := range rows {
		line(shortID(r.NodeID), r.Role, r)
	}
	if len(rows) > 1 {
		line("total", "", total)
	}
	return tw.Flush()
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
