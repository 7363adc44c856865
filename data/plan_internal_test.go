package data

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPlan runs the fusion scripts in testdata/plan.txt: each case lists
// logical operations, one a line (name, then kind=map|read|all|limit,
// compute=tasks|actors, pool=MIN-MAX (actors), cpu=N, gpu=N), and expects the stages and why
// each one starts. -rewrite regenerates the expectations for review.
func TestPlan(t *testing.T) {
	datadriven.RunTest(t, "testdata/plan.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "plan" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var ops []*logicalOp
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			fs := strings.Fields(line)
			o := &logicalOp{name: fs[0], kind: kindMap}
			switch fs[0] {
			case "read", "from_items", "union", "zip":
				o.kind = kindRead
			case "sort", "repartition", "aggregate", "random_shuffle":
				o.kind = kindAllToAll
			case "limit":
				o.kind = kindLimit
			}
			for _, kv := range fs[1:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "compute":
					o.compute = v
				case "pool":
					o.compute = "actors"
					fmt.Sscanf(v, "%d-%d", &o.pool.min, &o.pool.max)
				case "cpu", "gpu":
					if o.resources == nil {
						o.resources = map[string]float64{}
					}
					var x float64
					fmt.Sscan(v, &x)
					o.resources[strings.ToUpper(k)] = x
				default:
					d.Fatalf(t, "unknown argument %q", kv)
				}
			}
			ops = append(ops, o)
		}
		var b strings.Builder
		for i, s := range plan(ops) {
			fmt.Fprintf(&b, "stage %d %s: %s\n", i+1, s.name(), s.why)
		}
		return b.String()
	})
}
