package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// statusTimeout bounds `atoll status`'s query of the cluster.
const statusTimeout = 30 * time.Second

func newStatusCmd() *cobra.Command {
	var q clusterQuery
	var asJSON, all bool
	goneWithin := defaultGoneWithin
	cmd := &cobra.Command{
		Use:   "status [--address HOST:PORT] [--json] [--all] [--gone-within DURATION]",
		Short: "Show the cluster's nodes, their resources and load",
		Long: `Shows the nodes of the cluster at --address (default $` + nodeconfig.EnvAddress + `, then the
address the local head recorded): role, state, CPUs in use/total, other
resources (in use/total; what placement-group bundles reserve is in use),
object store use, queued and running tasks, the bundles held, and objects
pulled from other nodes. A node no longer alive is LEFT (it stopped, was drained,
or its driver ended) or DEAD (it failed: the cluster declared it dead),
with why and when; what a node uses shows as "-" unless its load report
arrived. When the head runs the autoscaler (atoll up), its node types, the
demand it waits for or finds infeasible, and its last decisions with their
reasons follow. Nodes gone longer ago than --gone-within, and the
nodes of drivers that finished, are left out unless --all is given.`,
		Args:                  args(0),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			st, err := clusterclient.GetStatus(ctx, address, nodeconfig.Credentials{})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			// The autoscaler's part, when the head runs one (atoll up);
			// none, or one that does not answer, leaves the nodes as the
			// status.
			as, _ := clusterclient.AutoscalerStatus(ctx, address, nodeconfig.Credentials{})
			if asJSON {
				st.Autoscaler = as
				return writeJSON(out, st)
			}
			if all {
				goneWithin = 0
			}
			if err := printStatus(out, st, all, goneWithin, time.Now()); err != nil {
				return err
			}
			if as == nil {
				return nil
			}
			return printAutoscaler(out, as, statusDecisions, time.Now())
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "also list the nodes of drivers that finished and nodes gone long ago")
	cmd.Flags().DurationVar(&goneWithin, "gone-within", defaultGoneWithin, "list the nodes that left or died within this long (0: all)")
	return cmd
}

// statusDecisions is how many of the autoscaler's last decisions
// `atoll status` shows.
const statusDecisions = 10

// defaultGoneWithin is how long `atoll status` (and the dashboard) keep
// listing a node after it left or died.
const defaultGoneWithin = time.Hour

// printStatus writes the status as a table and a summary line; the dead
// nodes of finished drivers only with all, and the nodes that ended more
// than goneWithin before now only if goneWithin is 0.
func printStatus(w io.Writer, st *clusterclient.Status, all bool, goneWithin time.Duration, now time.Time) error {
	nodes := slices.Clone(st.Nodes)
	slices.SortStableFunc(nodes, func(a, b clusterclient.NodeStatus) int {
		return compareNodes(role(a), a.Alive, a.NodeID, role(b), b.Alive, b.NodeID)
	})
	if st.Address != "" {
		fmt.Fprintf(w, "cluster %s\n", displayAddress(st.Address))
	}
	t := newTable("NODE", "ROLE", "STATE", "HOST", "CPU USED/TOTAL>", "RESOURCES USED/TOTAL", "STORE USED/TOTAL>", "QUEUED>", "RUNNING>", "BUNDLES>", "PULLS>", "ENDED")
	var alive, dead, left, heads, workers, drivers, finished, old, silent int
	for _, n := range nodes {
		if n.Driver && !n.Alive && !all {
			finished++
			continue
		}
		if !n.Alive && goneWithin > 0 && !n.EndTime.IsZero() && now.Sub(n.EndTime) > goneWithin {
			old++
			continue
		}
		state := "ALIVE"
		if n.Alive && !n.Reporting {
			// The GCS thinks it alive but it does not report: it may have
			// died with no other node there to notice.
			state = "SILENT"
			silent++
		} else if n.Alive {
			alive++
			switch role(n) {
			case "head":
				heads++
			case "driver":
				drivers++
			default:
				workers++
			}
		} else if n.Left {
			state = "LEFT"
			left++
		} else {
			state = "DEAD"
			dead++
		}
		cpu, other := "-/"+formatNum(n.Total["CPU"]), "-"
		if n.Reporting { // what a node uses is known from its load report only
			cpu, other = usedTotal(n.Available["CPU"], n.Total["CPU"]), otherResources(n)
		}
		t.add(shortID(n.NodeID), role(n), state, n.Hostname, cpu, other,
			humanBytes(n.StoreUsed)+"/"+humanBytes(n.StoreCap), strconv.Itoa(n.Queued), strconv.Itoa(n.Running), strconv.Itoa(n.Bundles), strconv.FormatUint(n.Pulls, 10),
			ended(n, now))
	}
	if err := t.write(w); err != nil {
		return err
	}
	roles := []string{plural(heads, "head", "heads"), plural(workers, "worker", "workers")}
	if drivers > 0 {
		roles = append(roles, plural(drivers, "driver", "drivers"))
	}
	var notListed []string
	if finished > 0 {
		notListed = append(notListed, plural(finished, "finished driver", "finished drivers"))
	}
	if old > 0 {
		notListed = append(notListed, fmt.Sprintf("%s gone over %s ago", plural(old, "node", "nodes"), goneWithin))
	}
	hidden := ""
	if len(notListed) > 0 {
		hidden = "; " + strings.Join(notListed, " and ") + " not listed (--all)"
	}
	if silent > 0 {
		hidden = fmt.Sprintf(", %d silent (no load report)", silent) + hidden
	}
	_, err := fmt.Fprintf(w, "%s alive (%s), %d left, %d dead%s\n", plural(alive, "node", "nodes"), strings.Join(roles, ", "), left, dead, hidden)
	return err
}

// ended says why and how long ago a node that is no longer alive ended;
// "-" for a live one.
func ended(n clusterclient.NodeStatus, now time.Time) string {
	if n.Alive {
		return "-"
	}
	why := n.EndReason
	if why == "" {
		why = "no reason recorded"
	}
	if n.EndTime.IsZero() {
		return why
	}
	return why + ", " + now.Sub(n.EndTime).Round(time.Second).String() + " ago"
}

// role is a node's role as status shows it.
func role(n clusterclient.NodeStatus) string { return nodeRole(n.IsHead, n.Driver) }

// shortID is a node id's first 8 hex digits.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// otherResources lists the resources other than CPU as NAME used/total,
// sorted by name; memory resources are shown in bytes units.
func otherResources(n clusterclient.NodeStatus) string {
	var names []string
	for name := range n.Total {
		if name != "CPU" {
			names = append(names, name)
		}
	}
	for name := range n.Available {
		if _, ok := n.Total[name]; !ok && name != "CPU" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		avail, total := n.Available[name], n.Total[name]
		if strings.Contains(strings.ToLower(name), "memory") {
			parts[i] = name + " " + humanBytes(uint64(max(total-avail, 0))) + "/" + humanBytes(uint64(max(total, 0)))
		} else {
			parts[i] = name + " " + usedTotal(avail, total)
		}
	}
	return strings.Join(parts, ", ")
}

// usedTotal formats "in use/total" from what is available of total.
func usedTotal(avail, total float64) string {
	return formatNum(max(total-avail, 0)) + "/" + formatNum(total)
}

// formatNum formats a resource quantity: integers plainly, fractions
// with at most two decimals.
func formatNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
