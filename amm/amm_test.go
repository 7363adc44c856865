package amm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs the scripted scenarios of testdata/*.txt (go test
// ./amm -rewrite regenerates the expectations). A scenario builds a
// snapshot and asks for decisions:
//
//	node n1 cap=100 used=60 [retiring] [driver]
//	object o1 size=10 copies=n1:primary,n2,n3:pinned [replicas=2|all]
//	run policies=reduce,replicate,retire,rebalance[:0.2] [max-fill=0.8]
//	decide [max-fill=0.8]
//	drop o1 n2
//	replicate o1 n4
//	move o1 n2 n4
//	reset
//
// run prints each policy's suggestions, then the decision; decide decides
// the suggestions listed in its input. Copy flags: primary, pinned,
// reading, pulling.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &Snapshot{Nodes: map[NodeID]*Node{}, Objects: map[ObjectID]*Object{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "reset":
				s = &Snapshot{Nodes: map[NodeID]*Node{}, Objects: map[ObjectID]*Object{}}
				return ""
			case "node":
				n := &Node{ID: NodeID(d.CmdArgs[0].Key)}
				var c, u int
				d.ScanArgs(t, "cap", &c)
				d.MaybeScanArgs(t, "used", &u)
				n.Capacity, n.Used = uint64(c), uint64(u)
				n.Retiring, n.Driver = d.HasArg("retiring"), d.HasArg("driver")
				s.Nodes[n.ID] = n
				return ""
			case "object":
				o := &Object{ID: ObjectID(d.CmdArgs[0].Key)}
				var size int
				var copies, replicas string
				d.ScanArgs(t, "size", &size)
				d.ScanArgs(t, "copies", &copies)
				d.MaybeScanArgs(t, "replicas", &replicas)
				o.Size = uint64(size)
				switch replicas {
				case "":
				case "all":
					o.Replicas = AllNodes
				default:
					n, err := strconv.Atoi(replicas)
					if err != nil {
						t.Fatalf("replicas=%q", replicas)
					}
					o.Replicas = n
				}
				for _, spec := range strings.Split(copies, ",") {
					parts := strings.Split(spec, ":")
					c := Copy{Node: NodeID(parts[0])}
					for _, f := range parts[1:] {
						switch f {
						case "primary":
							c.Primary = true
						case "pinned":
							c.Pinned = true
						case "reading":
							c.Reading = true
						case "pulling":
							c.Pulling = true
						default:
							t.Fatalf("copy flag %q", f)
						}
					}
					o.Copies = append(o.Copies, c)
				}
				s.Objects[o.ID] = o
				return ""
			case "run":
				var names string
				d.ScanArgs(t, "policies", &names)
				lim := limits(t, d)
				var b strings.Builder
				var policies []Policy
				for _, name := range strings.Split(names, ",") {
					p := policyNamed(t, name)
					policies = append(policies, p)
					fmt.Fprintf(&b, "%s: %v\n", p.Name(), p.Suggest(s))
				}
				before := dump(s)
				dec := Run(s, policies, lim)
				if dump(s) != before {
					t.Fatal("policies or Decide modified the snapshot")
				}
				b.WriteString(format(dec))
				return b.String()
			case "decide":
				var sugg []Suggestion
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					switch {
					case len(f) == 4 && f[0] == "move":
						sugg = append(sugg, Suggestion{Action: ActionMove, Object: ObjectID(f[1]), From: NodeID(f[2]), Node: NodeID(f[3])})
					case len(f) == 3:
						a := map[string]Action{"drop": ActionDrop, "replicate": ActionReplicate}[f[0]]
						sugg = append(sugg, Suggestion{Action: a, Object: ObjectID(f[1]), Node: NodeID(f[2])})
					default:
						t.Fatalf("suggestion %q", line)
					}
				}
				return format(Decide(s, sugg, limits(t, d)))
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func limits(t *testing.T, d *datadriven.TestData) Limits {
	var lim Limits
	var fill string
	d.MaybeScanArgs(t, "max-fill", &fill)
	if fill != "" {
		f, err := strconv.ParseFloat(fill, 64)
		if err != nil {
			t.Fatalf("max-fill=%q", fill)
		}
		lim.MaxFill = f
	}
	return lim
}

func policyNamed(t *testing.T, name string) Policy {
	base, arg, _ := strings.Cut(name, ":")
	switch base {
	case "reduce":
		return ReduceReplicas{}
	case "replicate":
		return Replicate{}
	case "retire":
		return RetireNode{}
	case "rebalance":
		r := Rebalance{}
		if arg != "" {
			f, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				t.Fatalf("rebalance threshold %q", arg)
			}
			r.Threshold = f
		}
		return r
	}
	t.Fatalf("unknown policy %q", name)
	return nil
}

func format(d Decision) string {
	reasons := make([]string, 0, len(d.Refused))
	for r, n := range d.Refused {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	slices.Sort(reasons)
	out := fmt.Sprintf("drops=%v\nreplicas=%v\n", d.Drops, d.Replicas)
	if len(d.Moves) > 0 {
		out += fmt.Sprintf("moves=%v\n", d.Moves)
	}
	return out + fmt.Sprintf("refused=%v\n", reasons)
}

func dump(s *Snapshot) string {
	var b strings.Builder
	for _, n := range s.sortedNodes() {
		fmt.Fprintf(&b, "%+v\n", *n)
	}
	for _, o := range s.sortedObjects() {
		fmt.Fprintf(&b, "%+v\n", *o)
	}
	return b.String()
}
