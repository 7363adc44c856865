package owner

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// BenchmarkLookupRecord reads the returns of 200,000 finished tasks, in
// an order unlike their submission's (a driver gathering results while
// the table holds many), by id (Lookup: the baseline, a map lookup each)
// and by the record each return's ref came with (LookupRecord), timed in
// turns in the same run. It reports ns a lookup of each and their ratio
// (record / id; lower is better).
func BenchmarkLookupRecord(b *testing.B) {
	const n = 200_000
	tb := New(Config{})
	rids := make([]ids.ObjectID, 0, n)
	recs := make([]Record, 0, n)
	value := inlineValue("result")
	for range n {
		id := ids.NewTaskID()
		spec := &atollpb.TaskSpec{TaskId: id.Bytes(), Type: atollpb.TaskType_NORMAL_TASK, Name: "f", NumReturns: 1, MaxRetries: 3}
		var rs []Record
		rids, rs = tb.SubmitRecords(rids, recs[len(recs):], Submission{Spec: spec})
		recs = recs[:len(recs)+len(rs)]
		tb.Result(&atollpb.TaskResult{TaskId: id.Bytes(), Returns: []*atollpb.ReturnObject{{ObjectId: rids[len(rids)-1].Bytes(), Value: value}}})
	}
	tb.TakeEffects()
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	var byID, byRecord time.Duration
	found := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for _, j := range order {
			if v, _, _, ok := tb.Lookup(rids[j]); ok && v != nil {
				found++
			}
		}
		mid := time.Now()
		for _, j := range order {
			if v, _, _, ok := tb.LookupRecord(rids[j], recs[j]); ok && v != nil {
				found++
			}
		}
		byID += mid.Sub(start)
		byRecord += time.Since(mid)
	}
	if found != 2*n*b.N {
		b.Fatalf("found %d of %d", found, 2*n*b.N)
	}
	lookups := float64(n * b.N)
	b.ReportMetric(float64(byID.Nanoseconds())/lookups, "ns/lookup_by_id")
	b.ReportMetric(float64(byRecord.Nanoseconds())/lookups, "ns/lookup_by_record")
	b.ReportMetric(float64(byRecord)/float64(byID), "ratio")
}
