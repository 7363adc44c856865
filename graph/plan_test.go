package graph

import (
	"context"
	"fmt"
	"testing"
)

var _ = Register("plan.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
var _ = Register("plan.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })

// BenchmarkPlanTree10k measures the driver's work before submission for
// a 9,999-task tree: validation, cull, fusion, specs and hashes.
func BenchmarkPlanTree10k(b *testing.B) {
	g := Graph{}
	level := make([]Key, 5000)
	for i := range level {
		level[i] = TupleKey("leaf", i)
		g[level[i]] = Call("plan.inc", Lit(i))
	}
	for d := 0; len(level) > 1; d++ {
		var next []Key
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			k := TupleKey(fmt.Sprintf("sum-%d", d), i/2)
			g[k] = Call("plan.add", Ref(level[i]), Ref(level[i+1]))
			next = append(next, k)
		}
		level = next
	}
	b.ResetTimer()
	for b.Loop() {
		p, err := makePlan(g, []Key{level[0]}, true, false)
		if err != nil || len(p.order) != 9999 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/9999, "us/task")
}
