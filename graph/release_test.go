package graph_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/graph"
)

var _ = graph.Register("t.ones", func(_ context.Context, n int) ([]float64, error) {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 1
	}
	return xs, nil
})

// storeDrained is a Callback whose Finish waits until the store holds no
// object. It keeps the refs PostSubmitAll passed it (which share the
// run's references) reachable until then, so only the run's explicit
// releases can drain the store, not the garbage collector.
type storeDrained struct {
	graph.NopCallback
	ctx     context.Context
	refs    map[graph.Key]atoll.Ref
	drained bool
	left    atolltest.MemoryStats
}

func (s *storeDrained) PostSubmitAll(refs map[graph.Key]atoll.Ref) { s.refs = refs }

func (s *storeDrained) Finish(error) {
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		m, err := atolltest.Memory(s.ctx)
		if err != nil {
			return
		}
		if s.left = m; m.StoreObjects == 0 {
			s.drained = true
			return
		}
		<-tick.C
	}
	runtime.KeepAlive(s.refs)
}

// TestIntermediatesReleased: a run holds only the results it was asked
// for; the intermediate ones (4 MiB each, in the store) are freed once
// their consumers have them, before the run ends — with and without a
// progress bar watching the tasks.
func TestIntermediatesReleased(t *testing.T) {
	ctx := start(t)
	g := graph.Graph{
		"a":     graph.Call("t.ones", graph.Lit(512<<10)),
		"b":     graph.Call("t.scale", graph.Ref("a"), graph.Lit(2.0)),
		"c":     graph.Call("t.scale", graph.Ref("b"), graph.Lit(2.0)),
		"total": graph.Call("t.total", graph.Ref("c")),
	}
	for _, withBar := range []bool{false, true} {
		check := &storeDrained{ctx: ctx}
		cbs := []graph.Callback{check}
		var out bytes.Buffer
		if withBar {
			cbs = append([]graph.Callback{graph.NewProgressBar(&out)}, cbs...)
		}
		// The requested value is inline (a float64): nothing of the run
		// may stay in the store.
		v, err := graph.ComputeOne[float64](ctx, g, "total", graph.WithFusion(false), graph.WithCallbacks(cbs...))
		if err != nil || v != 4*(512<<10) {
			t.Fatalf("total = %v, %v", v, err)
		}
		if !check.drained {
			t.Fatalf("progress bar %v: %d objects (%d bytes) still in the store as the run ends", withBar, check.left.StoreObjects, check.left.StoreUsed)
		}
		if withBar && !bytes.Contains(out.Bytes(), []byte("4/4 tasks")) {
			t.Fatalf("progress bar: %q", out.String())
		}
	}
}
