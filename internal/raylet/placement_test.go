package raylet

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// nodeNamed turns a scenario's node name into an id: the name's bytes,
// zero-padded, so ids sort like names. "-" is the zero id.
func nodeNamed(name string) ids.NodeID {
	var id ids.NodeID
	if name != "-" {
		copy(id[:], name)
	}
	return id
}

// nodeName is the inverse of nodeNamed.
func nodeName(id ids.NodeID) string {
	if id.IsZero() {
		return "-"
	}
	return strings.TrimRight(string(id[:]), "\x00")
}

// TestPlaceScenarios runs the scripted scenarios of testdata/place.txt
// (go test ./raylet -run Place -rewrite regenerates the expectations).
//
//	cluster                                  # replace the cluster view, reset the SPREAD cursor
//	a total=CPU:4 avail=CPU:3 queued=1       # one node per line; avail defaults to total
//	----
//	a total=CPU=4 avail=CPU=3 queued=1 util=0.5
//
//	place self=a demand=CPU:1 strategy=default|spread|affinity node=b soft
//	      args=b:100,c:10 exclude=b threshold=0.8 times=3 reserve
//	----
//	b                                        # one line per placement: the node, or the error
//
// times repeats the placement; reserve calls Reserve on the chosen node's
// view after each placement (it persists for the next commands). show
// prints the cluster view.
func TestPlaceScenarios(t *testing.T) {
	var nodes []NodeView
	var cursor uint64
	show := func() string {
		var b strings.Builder
		for _, n := range nodes {
			fmt.Fprintf(&b, "%s total=%s avail=%s queued=%g util=%.3g\n",
				nodeName(n.ID), n.Total, n.Available, n.QueuedCPU, n.Utilization())
		}
		return b.String()
	}
	datadriven.RunTest(t, "testdata/place.txt", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "cluster":
			nodes, cursor = nil, 0
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				nodes = append(nodes, parseNodeView(t, line))
			}
			return show()
		case "show":
			return show()
		case "place":
		default:
			t.Fatalf("unknown command %q", d.Cmd)
		}
		var selfS, demandS, strategy, target, args, exclude string
		threshold, times := 0.0, 1
		d.ScanArgs(t, "self", &selfS)
		d.MaybeScanArgs(t, "demand", &demandS)
		d.MaybeScanArgs(t, "strategy", &strategy)
		d.MaybeScanArgs(t, "node", &target)
		d.MaybeScanArgs(t, "args", &args)
		d.MaybeScanArgs(t, "exclude", &exclude)
		d.MaybeScanArgs(t, "threshold", &threshold)
		d.MaybeScanArgs(t, "times", &times)
		p := Placement{TaskName: "f", TaskID: "t1", Demand: parseResources(t, demandS), ArgBytes: map[ids.NodeID]uint64{}}
		switch strategy {
		case "", "default":
		case "spread":
			p.Strategy = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_SPREAD}
		case "affinity":
			p.Strategy = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, Soft: d.HasArg("soft")}
			switch target {
			case "":
				t.Fatal("affinity needs node=")
			case "short":
				p.Strategy.NodeId = []byte{1, 2, 3} // a malformed id
			default:
				id := nodeNamed(target)
				p.Strategy.NodeId = id.Bytes()
			}
		default:
			t.Fatalf("unknown strategy %q", strategy)
		}
		if args != "" {
			for _, a := range strings.Split(args, ",") {
				name, size, _ := strings.Cut(a, ":")
				n, err := strconv.ParseUint(size, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				p.ArgBytes[nodeNamed(name)] = n
			}
		}
		if exclude != "" {
			p.Exclude = nodeNamed(exclude)
		}
		var out strings.Builder
		for range times {
			before := show()
			id, err := Place(p, nodeNamed(selfS), nodes, &cursor, threshold)
			if show() != before {
				t.Fatal("Place modified the views")
			}
			if err != nil {
				if id != (ids.NodeID{}) {
					t.Fatalf("error %v with node %v", err, id)
				}
				fmt.Fprintf(&out, "error: %s\n", readableErr(err, nodes, target))
				continue
			}
			fmt.Fprintln(&out, nodeName(id))
			if d.HasArg("reserve") {
				for i := range nodes {
					if nodes[i].ID == id {
						nodes[i].Reserve(p.Demand)
					}
				}
			}
		}
		return out.String()
	})
}

// readableErr renders err with the short ids of the scenario's nodes
// replaced by their names.
func readableErr(err error, nodes []NodeView, target string) string {
	s := err.Error()
	names := []string{target}
	for _, n := range nodes {
		names = append(names, nodeName(n.ID))
	}
	for _, name := range names {
		if name != "" && name != "-" && name != "short" {
			s = strings.ReplaceAll(s, nodeNamed(name).Short(), name)
		}
	}
	return s
}

// parseNodeView parses "a total=CPU:4 avail=CPU:3 queued=1".
func parseNodeView(t *testing.T, line string) NodeView {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		t.Fatal("empty node line")
	}
	v := NodeView{ID: nodeNamed(fields[0]), Total: Resources{}}
	availSet := false
	for _, field := range fields[1:] {
		k, val, _ := strings.Cut(field, "=")
		switch k {
		case "total":
			v.Total = parseResources(t, val)
		case "avail":
			v.Available, availSet = parseResources(t, val), true
		case "queued":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatal(err)
			}
			v.QueuedCPU = f
		default:
			t.Fatalf("unknown node field %q", field)
		}
	}
	if !availSet {
		v.Available = v.Total.Clone()
	}
	return v
}

func TestPlaceUtilizationAndReserve(t *testing.T) {
	v := NodeView{Total: Resources{CPU: 4, "GPU": 2}, Available: Resources{CPU: 3, "GPU": 2}}
	if u := v.Utilization(); u != 0.25 {
		t.Fatalf("utilization %v, want 0.25", u)
	}
	shared := v.Available
	v.Reserve(Resources{CPU: 1, "GPU": 1})
	if v.Available[CPU] != 2 || v.Available["GPU"] != 1 || v.QueuedCPU != 0 {
		t.Fatalf("after a fitting reserve: %v queued %v", v.Available, v.QueuedCPU)
	}
	if shared[CPU] != 3 {
		t.Fatal("Reserve modified the shared Available map")
	}
	if u := v.Utilization(); u != 0.5 {
		t.Fatalf("utilization %v, want 0.5 (GPU is the critical resource)", u)
	}
	v.Reserve(Resources{CPU: 3})
	if v.Available[CPU] != 2 || v.QueuedCPU != 3 {
		t.Fatalf("a reserve that does not fit must queue: %v queued %v", v.Available, v.QueuedCPU)
	}
	if u := v.Utilization(); u != 1.25 {
		t.Fatalf("utilization %v, want 1.25 (queued CPU counts)", u)
	}

	// A node with no resources, or only zero ones, is never preferred.
	for _, total := range []Resources{nil, {}, {CPU: 0}} {
		if u := (NodeView{Total: total}).Utilization(); !math.IsInf(u, 1) {
			t.Fatalf("utilization of %v: %v, want +Inf", total, u)
		}
	}
	// Reserve on a view with no Available map.
	var empty NodeView
	empty.Reserve(Resources{})
	empty.Reserve(Resources{CPU: 1})
	if empty.QueuedCPU != 1 {
		t.Fatalf("queued %v, want 1", empty.QueuedCPU)
	}
}

func TestPlaceHardAffinityErrorIsTyped(t *testing.T) {
	self, dead := ids.NewNodeID(), ids.NewNodeID()
	nodes := []NodeView{{ID: self, Total: Resources{CPU: 2}, Available: Resources{CPU: 2}}}
	p := Placement{
		TaskName: "train", TaskID: "t42", Demand: Resources{CPU: 1},
		Strategy: &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, NodeId: dead.Bytes()},
	}
	id, err := Place(p, self, nodes, nil, 0)
	var ue *errs.UnschedulableError
	if !errors.As(err, &ue) || !errors.Is(err, errs.ErrUnschedulable) || !id.IsZero() {
		t.Fatalf("Place = %v, %v; want an UnschedulableError", id, err)
	}
	want := "node " + dead.Short() + " is dead or not in the cluster"
	if ue.TaskName != "train" || ue.TaskID != "t42" || ue.Reason != want {
		t.Fatalf("error %+v, want reason %q", ue, want)
	}
	if errors.Is(err, ErrNoFeasibleNode) {
		t.Fatal("an unschedulable affinity is not ErrNoFeasibleNode")
	}

	// An unknown strategy kind is unschedulable, not silently DEFAULT.
	unknown := p
	unknown.Strategy = &atollpb.SchedulingStrategy{Kind: 7}
	if _, err := Place(unknown, self, nodes, nil, 0); !errors.As(err, &ue) || ue.Reason != "unknown scheduling strategy kind 7" {
		t.Fatalf("unknown kind: %v", err)
	}

	// The same affinity, soft, falls back to DEFAULT.
	p.Strategy.Soft = true
	if id, err := Place(p, self, nodes, nil, 0); err != nil || id != self {
		t.Fatalf("soft affinity: %v, %v", id, err)
	}
}

func TestPlaceIsDeterministic(t *testing.T) {
	// Many nodes with equal utilisation and equal argument bytes: the result
	// must not depend on map order or on the order of nodes.
	var nodes []NodeView
	args := map[ids.NodeID]uint64{}
	for i := range 20 {
		id := nodeNamed(fmt.Sprintf("n%02d", i))
		nodes = append(nodes, NodeView{ID: id, Total: Resources{CPU: 2, Memory: 100}, Available: Resources{CPU: 1, Memory: 100}})
		args[id] = 10
	}
	self := nodeNamed("zz")
	p := Placement{Demand: Resources{CPU: 1}, ArgBytes: args}
	first, err := Place(p, self, nodes, nil, 0)
	if err != nil || nodeName(first) != "n00" {
		t.Fatalf("got %v, %v; want n00 (lowest id)", nodeName(first), err)
	}
	for range 50 {
		rev := make([]NodeView, len(nodes))
		for i, n := range nodes {
			rev[len(nodes)-1-i] = n
		}
		nodes = rev
		if id, _ := Place(p, self, nodes, nil, 0); id != first {
			t.Fatalf("placement changed: %v then %v", nodeName(first), nodeName(id))
		}
	}
}

func BenchmarkPlace(b *testing.B) {
	var nodes []NodeView
	for range 100 {
		nodes = append(nodes, NodeView{ID: ids.NewNodeID(), Total: Resources{CPU: 8, Memory: 1 << 30}, Available: Resources{CPU: 2, Memory: 1 << 29}})
	}
	p := Placement{Demand: Resources{CPU: 1}, ArgBytes: map[ids.NodeID]uint64{nodes[3].ID: 100}}
	for b.Loop() {
		if _, err := Place(p, nodes[0].ID, nodes, nil, 0); err != nil {
			b.Fatal(err)
		}
	}
}
