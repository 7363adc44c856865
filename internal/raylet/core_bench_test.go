package raylet

import (
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// BenchmarkCoreHotPath steps the Core through the hot path of a
// pipelined class: a task is submitted, the head attempt of a worker
// finishes, the pipeline is topped up (Submit → schedule → Finished →
// fillPipelines → Push), and the effects are taken as the shell does.
func BenchmarkCoreHotPath(b *testing.B) {
	now := time.Unix(0, 0)
	c := NewCore(CoreConfig{NodeID: ids.NewNodeID(), Resources: Resources{CPU: 2}, NumWorkers: 2, MaxWorkers: 4,
		PipelineDepth: 16, Saturation: 1, ArgsFraction: 0.7, Processes: true, Binary: "/bin/w"})
	c.Start(now)
	specs := make([]*atollpb.SubmitTask, 256)
	for i := range specs {
		specs[i] = &atollpb.SubmitTask{Spec: &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "t", Function: "t",
			NumReturns: 1, Resources: map[string]float64{CPU: 1}}}
	}
	res := &atollpb.TaskResult{}
	next := 0
	submit := func() {
		c.Submit(now, specs[next%len(specs)], nil)
		next++
	}
	for range 40 {
		submit()
	}
	c.Effects()
	c.Effects()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// Keep the queue's length and ids distinct from the running ones.
		w := c.pool[i%2]
		if len(w.tasks) == 0 {
			b.Fatal("worker ran dry")
		}
		a := w.tasks[0].assigned
		c.Finished(now, a.worker, a.attemptID, res, true)
		submit()
		c.Effects()
	}
}
