package autoscaler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// TestDecide runs testdata/policy/*.txt against Decide (go test
// ./internal/autoscaler -rewrite regenerates the expectations). A script
// builds a Policy and a Snapshot, then `decide` prints the Decision:
//
//	policy [speed=1] [min-launching=5] [idle=60s] [launch-timeout=5m] [max-workers=N]
//	type NAME CPU:2,GPU:1 [min=N] [max=N]
//	node n1 CPU:2 [avail=CPU:1] [head] [busy] [idle=30s] [type=T instance=i1] [draining]
//	instance i1 TYPE launching|running|draining|terminating [node=n1] [age=10s]
//	demand CPU:1 [x3] [actors]
//	group pg1 STRICT_SPREAD CPU:1;CPU:1 [placed=n1,n2]
//	request CPU:2;CPU:2
//	forget nodes|instances|demands|groups|requests
//	decide
func TestDecide(t *testing.T) {
	datadriven.Walk(t, "testdata/policy", func(t *testing.T, path string) {
		now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
		p := Policy{UpscalingSpeed: 1, MinLaunching: 5, IdleTimeout: time.Minute, LaunchTimeout: 5 * time.Minute}
		s := Snapshot{Now: now}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(name string) string {
				var v string
				if d.HasArg(name) {
					d.ScanArgs(t, name, &v)
				}
				return v
			}
			dur := func(name string) time.Duration {
				v := arg(name)
				if v == "" {
					return 0
				}
				x, err := time.ParseDuration(v)
				if err != nil {
					t.Fatalf("%s: %v", d.Pos, err)
				}
				return x
			}
			switch d.Cmd {
			case "policy":
				if v := arg("speed"); v != "" {
					p.UpscalingSpeed, _ = strconv.ParseFloat(v, 64)
				}
				d.MaybeScanArgs(t, "min-launching", &p.MinLaunching)
				d.MaybeScanArgs(t, "max-workers", &p.MaxWorkers)
				if d.HasArg("idle") {
					p.IdleTimeout = dur("idle")
				}
				if d.HasArg("launch-timeout") {
					p.LaunchTimeout = dur("launch-timeout")
				}
			case "type":
				nt := NodeType{Name: d.CmdArgs[0].Key, Resources: res(t, d.CmdArgs[1].Key)}
				d.MaybeScanArgs(t, "min", &nt.Min)
				d.MaybeScanArgs(t, "max", &nt.Max)
				p.Types = append(p.Types, nt)
			case "node":
				n := Node{ID: d.CmdArgs[0].Key, Total: res(t, d.CmdArgs[1].Key), Head: d.HasArg("head"), Busy: d.HasArg("busy"),
					Draining: d.HasArg("draining"), Type: arg("type"), Instance: arg("instance")}
				n.Available = n.Total.Clone()
				if a := arg("avail"); a != "" {
					n.Available = res(t, a)
				}
				n.IdleSince = now.Add(-dur("idle"))
				s.Nodes = append(s.Nodes, n)
			case "instance":
				in := Instance{ID: d.CmdArgs[0].Key, Type: d.CmdArgs[1].Key, NodeID: arg("node"), Since: now.Add(-dur("age"))}
				for _, st := range []InstanceState{Launching, Running, Draining, Terminating} {
					if d.CmdArgs[2].Key == st.String() {
						in.State = st
					}
				}
				s.Instances = append(s.Instances, in)
			case "demand":
				dm := Demand{Resources: res(t, d.CmdArgs[0].Key), Count: 1, Actors: d.HasArg("actors")}
				if len(d.CmdArgs) > 1 && strings.HasPrefix(d.CmdArgs[1].Key, "x") {
					dm.Count, _ = strconv.Atoi(d.CmdArgs[1].Key[1:])
				}
				s.Demands = append(s.Demands, dm)
			case "group":
				g := GroupDemand{ID: d.CmdArgs[0].Key, Strategy: atollpb.PlacementStrategy(atollpb.PlacementStrategy_value[d.CmdArgs[1].Key])}
				for _, b := range strings.Split(d.CmdArgs[2].Key, ";") {
					g.Bundles = append(g.Bundles, res(t, b))
				}
				if v := arg("placed"); v != "" {
					g.Placed = strings.Split(v, ",")
				}
				s.Groups = append(s.Groups, g)
			case "request":
				for _, b := range strings.Split(d.CmdArgs[0].Key, ";") {
					s.Requests = append(s.Requests, res(t, b))
				}
			case "forget":
				switch d.CmdArgs[0].Key {
				case "nodes":
					s.Nodes = nil
				case "instances":
					s.Instances = nil
				case "demands":
					s.Demands = nil
				case "groups":
					s.Groups = nil
				case "requests":
					s.Requests = nil
				}
			case "decide":
				return format(Decide(p, s))
			default:
				t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			}
			return ""
		})
	})
}

func res(t *testing.T, s string) raylet.Resources {
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

func format(d Decision) string {
	var lines []string
	for _, l := range d.Launches {
		lines = append(lines, fmt.Sprintf("launch %d %s: %s", l.Count, l.Type, l.Reason))
	}
	for _, dr := range d.Drains {
		lines = append(lines, fmt.Sprintf("drain %s (node %s): %s", dr.Instance, dr.NodeID, dr.Reason))
	}
	for _, tm := range d.Terminations {
		lines = append(lines, fmt.Sprintf("terminate %s: %s", tm.Instance, tm.Reason))
	}
	for _, u := range d.Unmet {
		kind := "unmet"
		if u.Infeasible {
			kind = "infeasible"
		}
		lines = append(lines, fmt.Sprintf("%s %s x%d %s: %s", kind, u.Source, u.Count, u.Resources, u.Reason))
	}
	if len(lines) == 0 {
		return "(nothing to do)\n"
	}
	slices.Sort(lines[len(d.Launches)+len(d.Drains)+len(d.Terminations):]) // unmet in a stable order
	return strings.Join(lines, "\n") + "\n"
}
