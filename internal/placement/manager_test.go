package placement

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// TestManagerScenarios runs testdata/manager/*.txt against a Manager (go
// test ./internal/placement -rewrite regenerates the expectations). Each
// command applies events and prints the effects, one per line; the steps
// sent to nodes wait in an outbox until a command answers them:
//
//	node n1 CPU:4 [avail=CPU:2] [draining]   a node's totals (and a report's room)
//	report n1 avail=CPU:2 [held=pg1/0,pg1/1c]  a load report (c: committed)
//	down n1 [left]
//	create pg1 STRATEGY CPU:1;CPU:1 [name=x] [ns=y] [creator=d1] [detached]
//	remove pg1
//	ok [n1] | refuse n1 WHY | fail n1 | drop [n1]   answer the oldest step (to n1)
//	stabilize                 answer every step ok, until none is left
//	tick DURATION | restart [gone=n2] | show [pg1] | outbox
//
// After every command the harness checks that no group is placed on a
// node twice against its strategy and that every bundle of a CREATED
// group is on a live node.
func TestManagerScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/manager", func(t *testing.T, path string) {
		e := newEnv()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.run(t, d)
			e.check(t)
			return out
		})
	})
}

type env struct {
	m      *Manager
	now    time.Time
	names  map[string]ids.ID16
	labels map[ids.ID16]string
	outbox []Send
	store  map[ids.ID16]*atollpb.PlacementGroupInfo // the shell's KV
	alive  map[ids.NodeID]bool
}

func newEnv() *env {
	e := &env{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), names: map[string]ids.ID16{}, labels: map[ids.ID16]string{},
		store: map[ids.ID16]*atollpb.PlacementGroupInfo{}, alive: map[ids.NodeID]bool{}}
	e.m = New(Config{OpTimeout: 5 * time.Second, RetryInterval: time.Second, ReportGrace: 2 * time.Second, MaxRemoved: 3})
	return e
}

func (e *env) id(name string) ids.ID16 {
	if id, ok := e.names[name]; ok {
		return id
	}
	var id ids.ID16
	copy(id[:], name)
	e.names[name], e.labels[id] = id, name
	return id
}

func (e *env) label(b []byte) string {
	id, err := ids.FromBytes(b)
	if err != nil {
		return "-"
	}
	if l, ok := e.labels[id]; ok {
		return l
	}
	return id.Short()
}

func parseRes(t *testing.T, s string) raylet.Resources {
	r := raylet.Resources{}
	if s == "" || s == "-" {
		return r
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, ":")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			t.Fatalf("bad resource %q", kv)
		}
		r[k] = f
	}
	return r
}

func (e *env) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	arg := func(name string) string {
		var s string
		if d.HasArg(name) {
			d.ScanArgs(t, name, &s)
		}
		return s
	}
	switch d.Cmd {
	case "node":
		id := e.id(d.CmdArgs[0].Key)
		e.alive[id] = true
		total := parseRes(t, d.CmdArgs[1].Key)
		if d.HasArg("avail") {
			e.m.NodeUp(e.now, id, total, parseRes(t, arg("avail")), d.HasArg("draining"), []*atollpb.BundleHeld{})
		} else {
			e.m.NodeUp(e.now, id, total, nil, d.HasArg("draining"), nil)
		}
	case "report":
		id := e.id(d.CmdArgs[0].Key)
		held := []*atollpb.BundleHeld{}
		if h := arg("held"); h != "" {
			for _, b := range strings.Split(h, ",") {
				pg, idx, _ := strings.Cut(b, "/")
				committed := strings.HasSuffix(idx, "c")
				i, err := strconv.Atoi(strings.TrimSuffix(idx, "c"))
				if err != nil {
					t.Fatalf("bad held bundle %q", b)
				}
				held = append(held, &atollpb.BundleHeld{PlacementGroupId: e.id(pg).Bytes(), Index: int32(i), Committed: committed})
			}
		}
		n := e.m.nodes[id]
		if n == nil {
			t.Fatalf("report from unknown node %s", d.CmdArgs[0].Key)
		}
		e.m.NodeUp(e.now, id, n.total, parseRes(t, arg("avail")), d.HasArg("draining"), held)
	case "waiting": // waiting n1 pg1 [pg2 ...]: n1's report shows work waiting for these groups
		var groups []ids.ID16
		for _, a := range d.CmdArgs[1:] {
			groups = append(groups, e.id(a.Key))
		}
		e.m.Waiting(e.now, e.id(d.CmdArgs[0].Key), groups)
	case "down":
		id := e.id(d.CmdArgs[0].Key)
		delete(e.alive, id)
		e.m.NodeDown(e.now, id, d.HasArg("left"))
	case "create":
		info := &atollpb.PlacementGroupInfo{PlacementGroupId: e.id(d.CmdArgs[0].Key).Bytes(), Name: arg("name"), Namespace: arg("ns"),
			Detached: d.HasArg("detached")}
		s, ok := atollpb.PlacementStrategy_value[d.CmdArgs[1].Key]
		if !ok {
			s = 99
		}
		info.Strategy = atollpb.PlacementStrategy(s)
		if len(d.CmdArgs) > 2 && d.CmdArgs[2].Key != "" && !strings.Contains(d.CmdArgs[2].Key, "=") {
			for _, b := range strings.Split(d.CmdArgs[2].Key, ";") {
				info.Bundles = append(info.Bundles, &atollpb.Bundle{Resources: parseRes(t, b)})
			}
		}
		if c := arg("creator"); c != "" {
			info.CreatorNodeId = e.id(c).Bytes()
		}
		next, err := e.m.CheckCreate(e.now, info)
		if err != nil {
			return e.relabel("error: " + err.Error() + "\n")
		}
		if next == nil {
			return "(known already)\n"
		}
		e.store[e.id(d.CmdArgs[0].Key)] = next
		e.m.Create(e.now, next)
	case "remove":
		id := e.id(d.CmdArgs[0].Key)
		if err := e.m.CheckRemove(id); err != nil {
			return e.relabel("error: " + err.Error() + "\n")
		}
		e.m.Remove(e.now, id, arg("reason"))
		e.store[id] = e.m.Group(id) // the removed entry stays until it is forgotten
	case "ok", "refuse", "fail", "drop":
		node := ""
		if len(d.CmdArgs) > 0 {
			node = d.CmdArgs[0].Key
		}
		i := slices.IndexFunc(e.outbox, func(s Send) bool { return node == "" || e.label(s.Node.Bytes()) == node })
		if i < 0 {
			return "error: nothing sent to " + node + "\n"
		}
		s := e.outbox[i]
		e.outbox = slices.Delete(e.outbox, i, i+1)
		switch d.Cmd {
		case "ok":
			e.answer(s, "", nil)
		case "refuse":
			e.answer(s, strings.Join(d.CmdArgs[1].Vals, " ")+d.CmdArgs[1].Key, nil)
		case "fail":
			e.answer(s, "", errs.Unavailablef("no answer"))
		}
	case "stabilize":
		for len(e.outbox) > 0 {
			s := e.outbox[0]
			e.outbox = e.outbox[1:]
			e.answer(s, "", nil)
			e.drain(&out)
		}
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		e.now = e.now.Add(dur)
		e.m.Tick(e.now)
	case "restart": // restart [gone=n2]: a new Manager from the store; nodes known again from the GCS but gone
		nodes := e.m.nodes
		if g := arg("gone"); g != "" {
			delete(nodes, e.id(g))
			delete(e.alive, e.id(g))
		}
		e.m = New(e.m.cfg)
		var infos []*atollpb.PlacementGroupInfo
		for _, id := range sortedIDs(e.store) {
			infos = append(infos, e.store[id])
		}
		e.m.Restore(e.now, infos)
		e.outbox = nil
		for _, id := range sortedNodes(nodes) {
			e.m.NodeUp(e.now, id, nodes[id].total, nil, false, nil)
		}
		e.m.Synced(e.now)
	case "show":
		var list []*atollpb.PlacementGroupInfo
		if len(d.CmdArgs) > 0 {
			list = append(list, e.m.Group(e.id(d.CmdArgs[0].Key)))
		} else {
			list = e.m.List()
		}
		for _, g := range list {
			out.WriteString(e.describe(g) + "\n")
		}
		return e.relabel(out.String())
	case "outbox":
		for _, s := range e.outbox {
			out.WriteString(e.formatSend(s) + "\n")
		}
		return out.String()
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	e.drain(&out)
	if out.Len() == 0 {
		return "(no effects)\n"
	}
	return e.relabel(out.String())
}

// relabel replaces the short ids of named things in s with their names.
func (e *env) relabel(s string) string {
	for name, id := range e.names {
		s = strings.ReplaceAll(s, id.Short(), name)
	}
	return s
}

// answer gives the Manager a node's answer to s (a release needs none).
func (e *env) answer(s Send, refused string, err error) {
	if s.Op.Kind == atollpb.BundleOp_RELEASE {
		return
	}
	e.m.Reply(e.now, s.Node, s.Op.Txn, refused, err)
}

func (e *env) drain(out *strings.Builder) {
	for _, eff := range e.m.Effects() {
		switch x := eff.(type) {
		case Send:
			e.outbox = append(e.outbox, x)
			out.WriteString(e.formatSend(x))
		case Persist:
			e.store[ids.MustFromBytes(x.Info.PlacementGroupId)] = x.Info
			out.WriteString("persist " + e.describe(x.Info))
		case Forget:
			delete(e.store, x.ID)
			out.WriteString("forget " + e.label(x.ID.Bytes()))
		case Changed:
			out.WriteString("changed " + e.describe(x.Info))
		case Notify:
			out.WriteString("notify " + e.label(x.Node.Bytes()) + " " + e.describe(x.Info))
		}
		out.WriteByte('\n')
	}
}

func (e *env) formatSend(s Send) string {
	var bs []string
	for _, b := range s.Op.Bundles {
		bs = append(bs, fmt.Sprintf("%s/%d", e.label(b.PlacementGroupId), b.Index))
	}
	kind := s.Op.Kind.String()
	if s.Op.Commit {
		kind += "+COMMIT"
	}
	str := fmt.Sprintf("send %s %s %s", e.label(s.Node.Bytes()), kind, strings.Join(bs, ","))
	if s.Op.Txn != 0 {
		str += fmt.Sprintf(" txn=%d", s.Op.Txn)
	}
	if s.Op.Reason != "" {
		str += fmt.Sprintf(" (%s)", s.Op.Reason)
	}
	return str
}

func (e *env) describe(g *atollpb.PlacementGroupInfo) string {
	s := fmt.Sprintf("%s %s %s", e.label(g.PlacementGroupId), strings.TrimPrefix(g.State.String(), "PLACEMENT_GROUP_"), g.Strategy)
	var nodes []string
	for _, n := range g.BundleNodes {
		if len(n) == 0 {
			nodes = append(nodes, "-")
		} else {
			nodes = append(nodes, e.label(n))
		}
	}
	s += " [" + strings.Join(nodes, " ") + "]"
	if g.Reschedules > 0 {
		s += fmt.Sprintf(" reschedules=%d", g.Reschedules)
	}
	if g.Infeasible {
		s += " infeasible"
	}
	if g.Reason != "" {
		s += ": " + g.Reason
	}
	return s
}

// check asserts what must hold after every command.
func (e *env) check(t *testing.T) {
	t.Helper()
	for _, g := range e.m.groups {
		seen := map[ids.NodeID]int{}
		for i, n := range g.placed {
			if n.IsZero() {
				if g.info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED {
					t.Fatalf("group %s is CREATED but bundle %d has no node", e.label(g.info.PlacementGroupId), i)
				}
				continue
			}
			if !e.alive[n] {
				t.Fatalf("group %s: bundle %d is on %s, which is not alive", e.label(g.info.PlacementGroupId), i, e.label(n.Bytes()))
			}
			seen[n]++
		}
		switch g.info.Strategy {
		case atollpb.PlacementStrategy_STRICT_SPREAD:
			for n, c := range seen {
				if c > 1 {
					t.Fatalf("STRICT_SPREAD group %s has %d bundles on %s", e.label(g.info.PlacementGroupId), c, e.label(n.Bytes()))
				}
			}
		case atollpb.PlacementStrategy_STRICT_PACK:
			if len(seen) > 1 {
				t.Fatalf("STRICT_PACK group %s spans %d nodes", e.label(g.info.PlacementGroupId), len(seen))
			}
		}
	}
}
