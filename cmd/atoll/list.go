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
	"github.com/spf13/pflag"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

func newListCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	var f listFilter
	cmd := &cobra.Command{
		Use:   "list nodes|actors|jobs|tasks|objects|placement-groups [--address HOST:PORT] [--json] [filters]",
		Short: "List the cluster's nodes, actors, jobs, recent tasks, stored objects or placement groups",
		Long: `Lists what the cluster at --address (default $` + nodeconfig.EnvAddress + `, then the
address the local head recorded) knows:
  nodes    every node the GCS knows (dead ones included)
  actors   every actor (state, node, restarts, death cause)
  jobs     drivers' own jobs and submitted ones (state, start and end)
  tasks    the task attempts and actor calls the live nodes finished recently
           (each node keeps its last 4096), newest last; running and queued
           work is not listed
  objects  the objects in the live nodes' stores, largest first (at most
           --limit per node); a copy pulled from another node is listed on
           each node that holds it
  placement-groups
           every placement group (strategy, state, each bundle's node, why it
           waits), the removed ones the head remembers included
Filters: --job, --node and --worker take an id's first digits, --name a part
of a task's name, --failed only failed attempts (tasks); --node, --owner and
--min-size (e.g. 1MiB) for objects. --limit caps the rows (tasks: the newest).`,
		Args:                  args(1, "what to list (nodes, actors, jobs, tasks, objects or placement-groups)"),
		ValidArgs:             []string{"nodes", "actors", "jobs", "tasks", "objects", "placement-groups"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			kind := a[0]
			if !slices.Contains(cmd.ValidArgs, kind) {
				return &usageErr{err: errs.Invalidf("list %q: want nodes, actors, jobs, tasks, objects or placement-groups", kind), usage: strings.TrimRight(cmd.UsageString(), "\n")}
			}
			if err := f.check(cmd, kind); err != nil {
				return &usageErr{err: err, usage: strings.TrimRight(cmd.UsageString(), "\n")}
			}
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			return list(ctx, cmd.OutOrStdout(), address, kind, f, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as one JSON document")
	cmd.Flags().StringVar(&f.job, "job", "", "tasks of the job whose id starts with `PREFIX`")
	cmd.Flags().StringVar(&f.node, "node", "", "tasks or objects on the node whose id starts with `PREFIX`")
	cmd.Flags().StringVar(&f.worker, "worker", "", "tasks run by the worker whose id starts with `PREFIX`")
	cmd.Flags().StringVar(&f.name, "name", "", "tasks whose name contains `TEXT`")
	cmd.Flags().BoolVar(&f.failed, "failed", false, "failed task attempts only")
	cmd.Flags().StringVar(&f.owner, "owner", "", "objects owned by the worker or driver whose id starts with `PREFIX`")
	cmd.Flags().Var(&f.minSize, "min-size", "objects of at least `SIZE` (e.g. 1MiB)")
	cmd.Flags().IntVar(&f.limit, "limit", 1000, "at most `N` rows (tasks: the newest N)")
	return cmd
}

// listFilter is `atoll list`'s filters.
type listFilter struct {
	job, node, worker, name, owner string
	failed                         bool
	minSize                        benchfmt.Size
	limit                          int
}

// check refuses a filter the kind does not take, and a bad limit.
func (f *listFilter) check(cmd *cobra.Command, kind string) error {
	takes := map[string][]string{
		"tasks":   {"job", "node", "worker", "name", "failed", "limit"},
		"objects": {"node", "owner", "min-size", "limit"},
	}
	var err error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if err == nil && fl.Name != "json" && fl.Name != "address" && !slices.Contains(takes[kind], fl.Name) {
			err = errs.Invalidf("list %s: --%s filters %s", kind, fl.Name, filtersWhat(fl.Name, takes))
		}
	})
	if err == nil && f.limit <= 0 {
		err = errs.Invalidf("--limit %d: want at least 1", f.limit)
	}
	return err
}

// filtersWhat names the kinds a filter applies to.
func filtersWhat(flag string, takes map[string][]string) string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(takes)) {
		if slices.Contains(takes[k], flag) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return "nothing here"
	}
	return "only " + strings.Join(kinds, " and ")
}

func list(ctx context.Context, w io.Writer, address, kind string, f listFilter, asJSON bool) error {
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
	case "placement-groups":
		groups, err := clusterclient.ListPlacementGroups(ctx, address, nodeconfig.Credentials{})
		if err != nil {
			return err
		}
		return printPlacementGroups(w, groups, asJSON)
	case "tasks", "objects":
		nc, _, err := clusterclient.Dial(address, "atoll-list", nodeconfig.Credentials{})
		if err != nil {
			return err
		}
		defer nc.Close()
		if kind == "tasks" {
			evs, err := clusterclient.TimelineOn(ctx, nc)
			if err != nil {
				return err
			}
			return printTasks(w, f.tasks(evs), asJSON)
		}
		objs, err := clusterclient.ListObjectsOn(ctx, nc, uint32(min(f.limit, 1<<20)))
		if err != nil {
			return err
		}
		objs.Objects = f.objects(objs.Objects)
		return printObjects(w, objs, asJSON)
	}
	jobs, err := clusterclient.ListJobs(ctx, address, nodeconfig.Credentials{})
	if err != nil {
		return err
	}
	return printJobs(w, jobs, asJSON)
}

// tasks keeps the task attempts and actor calls of evs that pass f, the
// newest f.limit.
func (f listFilter) tasks(evs []clusterclient.TimelineEvent) []clusterclient.TimelineEvent {
	var out []clusterclient.TimelineEvent
	for _, e := range evs {
		switch {
		case e.Kind != raylet.EventTask && e.Kind != raylet.EventActorCreation && e.Kind != raylet.EventActorCall,
			!strings.HasPrefix(e.JobID, f.job), !strings.HasPrefix(e.NodeID, f.node),
			!strings.HasPrefix(e.WorkerID, f.worker), !strings.Contains(e.Name, f.name), f.failed && !e.Failed:
			continue
		}
		out = append(out, e)
	}
	if len(out) > f.limit {
		out = out[len(out)-f.limit:]
	}
	return out
}

// objects keeps the objects that pass f, the largest f.limit.
func (f listFilter) objects(objs []clusterclient.ObjectInfo) []clusterclient.ObjectInfo {
	var out []clusterclient.ObjectInfo
	for _, o := range objs {
		if strings.HasPrefix(o.NodeID, f.node) && strings.HasPrefix(o.OwnerID, f.owner) && o.Size >= uint64(f.minSize) {
			out = append(out, o)
		}
	}
	return out[:min(len(out), f.limit)]
}

func printTasks(w io.Writer, evs []clusterclient.TimelineEvent, asJSON bool) error {
	if asJSON {
		if evs == nil {
			evs = []clusterclient.TimelineEvent{}
		}
		return writeJSON(w, map[string]any{"tasks": evs})
	}
	if len(evs) == 0 {
		_, err := fmt.Fprintln(w, "no finished tasks (nodes keep their last 4096)")
		return err
	}
	t := newTable("TASK", "NAME", "KIND", "STATE", "JOB", "NODE", "WORKER", "STARTED", "TOOK>", "ERROR")
	for _, e := range evs {
		state := "FINISHED"
		if e.Failed {
			state = "FAILED"
		}
		t.add(shortID(e.TaskID), e.Name, e.Kind, state, shortID(e.JobID), shortID(e.NodeID), shortID(e.WorkerID),
			e.Start.Local().Format("15:04:05.000"), e.End.Sub(e.Start).Round(time.Microsecond).String(), firstLine(e.Error, 60))
	}
	return t.write(w)
}

func printObjects(w io.Writer, l *clusterclient.ObjectListing, asJSON bool) error {
	if asJSON {
		if l.Objects == nil {
			l.Objects = []clusterclient.ObjectInfo{}
		}
		return writeJSON(w, l)
	}
	if len(l.Objects) == 0 {
		fmt.Fprintln(w, "no objects")
	} else {
		t := newTable("OBJECT", "SIZE>", "NODE", "COPY", "PINNED", "SEALED", "OWNER", "OWNER NODE")
		for _, o := range l.Objects {
			node := shortID(o.NodeID)
			if o.Driver {
				node += " (driver)"
			}
			t.add(shortID(o.ObjectID), humanBytes(o.Size), node, yesNo(o.Copy), yesNo(o.Pinned), yesNo(o.Sealed),
				shortID(o.OwnerID), shortID(o.OwnerNode))
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	for _, n := range l.Truncated {
		fmt.Fprintf(w, "node %s holds more objects than --limit: its smallest are not listed\n", shortID(n))
	}
	for _, n := range l.Unanswered {
		fmt.Fprintf(w, "node %s did not answer\n", shortID(n))
	}
	return nil
}

// yesNo renders a flag in a table.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
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

// groupRow is a placement group as `atoll list placement-groups --json`
// prints it.
type groupRow struct {
	PlacementGroupID string               `json:"placement_group_id"`
	Name             string               `json:"name,omitempty"`
	Namespace        string               `json:"namespace,omitempty"`
	Strategy         string               `json:"strategy"`
	State            string               `json:"state"`
	Bundles          []map[string]float64 `json:"bundles"`
	BundleNodes      []string             `json:"bundle_nodes"`
	Reason           string               `json:"reason,omitempty"`
	Infeasible       bool                 `json:"infeasible,omitempty"`
	Detached         bool                 `json:"detached,omitempty"`
	Reschedules      int32                `json:"reschedules,omitempty"`
	CreatorNodeID    string               `json:"creator_node_id,omitempty"`
	CreateTime       string               `json:"create_time,omitempty"`
	CreatedTime      string               `json:"created_time,omitempty"`
	RemoveTime       string               `json:"remove_time,omitempty"`
}

func printPlacementGroups(w io.Writer, groups []*atollpb.PlacementGroupInfo, asJSON bool) error {
	rows := make([]groupRow, 0, len(groups))
	rfc := func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	}
	for _, g := range groups {
		r := groupRow{PlacementGroupID: hexID(g.PlacementGroupId), Name: g.Name, Namespace: g.Namespace, Strategy: g.Strategy.String(),
			State: strings.TrimPrefix(g.State.String(), "PLACEMENT_GROUP_"), Reason: g.Reason, Infeasible: g.Infeasible, Detached: g.Detached,
			Reschedules: g.Reschedules, CreatorNodeID: hexID(g.CreatorNodeId), CreateTime: rfc(g.CreateTimeUnixMs),
			CreatedTime: rfc(g.CreatedTimeUnixMs), RemoveTime: rfc(g.RemoveTimeUnixMs)}
		for i, b := range g.Bundles {
			r.Bundles = append(r.Bundles, b.GetResources())
			node := ""
			if i < len(g.BundleNodes) {
				node = hexID(g.BundleNodes[i])
			}
			r.BundleNodes = append(r.BundleNodes, node)
		}
		rows = append(rows, r)
	}
	if asJSON {
		return writeJSON(w, map[string]any{"placement_groups": rows})
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no placement groups")
		return err
	}
	t := newTable("GROUP", "NAME", "STRATEGY", "STATE", "BUNDLES", "NODES", "WHY")
	for _, r := range rows {
		var bundles, nodes []string
		for i, b := range r.Bundles {
			bundles = append(bundles, "{"+resources(b)+"}")
			n := "-"
			if r.BundleNodes[i] != "" {
				n = shortID(r.BundleNodes[i])
			}
			nodes = append(nodes, n)
		}
		why := r.Reason
		if r.Infeasible {
			why = "infeasible: " + why
		}
		t.add(shortID(r.PlacementGroupID), r.Name, r.Strategy, r.State, strings.Join(bundles, " "), strings.Join(nodes, " "), firstLine(why, 80))
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

// firstLine is s's first line, cut to n runes ("…" added when cut).
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
