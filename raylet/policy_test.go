package raylet

import (
	"slices"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

func TestPickFillsResourcesInClassOrder(t *testing.T) {
	cpu := func(n float64, count int) Candidate { return Candidate{Demand: Resources{CPU: n}, Count: count} }
	cases := []struct {
		name    string
		classes []Candidate
		avail   Resources
		slots   int
		want    []int
		reasons []PendingReason
	}{
		{"two cpus three tasks", []Candidate{cpu(1, 3)}, Resources{CPU: 2}, 8, []int{2}, []PendingReason{PendingResources}},
		{"slots bound dispatch", []Candidate{cpu(1, 2)}, Resources{CPU: 4}, 1, []int{1}, []PendingReason{PendingWorker}},
		{"big class does not block small ones", []Candidate{cpu(4, 1), cpu(1, 1)}, Resources{CPU: 2}, 8, []int{0, 1},
			[]PendingReason{PendingResources, ""}},
		{"custom resources", []Candidate{{Demand: Resources{"GPU": 1}, Count: 1}, {Demand: Resources{CPU: 1, "GPU": 1}, Count: 1}},
			Resources{CPU: 2, "GPU": 1}, 8, []int{1, 0}, []PendingReason{"", PendingResources}},
		{"actor creations need no slot", []Candidate{{Demand: Resources{CPU: 1}, NoSlot: true, Count: 1}, cpu(1, 1)}, Resources{CPU: 2}, 0,
			[]int{1, 0}, []PendingReason{"", PendingWorker}},
		{"zero demand always fits", []Candidate{{Demand: Resources{}, Count: 3}}, Resources{}, 2, []int{2}, []PendingReason{PendingWorker}},
		{"fractional cpus", []Candidate{cpu(0.5, 5)}, Resources{CPU: 2}, 8, []int{4}, []PendingReason{PendingResources}},
	}
	for _, c := range cases {
		avail := c.avail.Clone()
		got, reasons := Pick(c.classes, c.avail, c.slots)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: dispatch %v, want %v", c.name, got, c.want)
		}
		if !slices.Equal(reasons, c.reasons) {
			t.Errorf("%s: reasons %q, want %q", c.name, reasons, c.reasons)
		}
		if avail.String() != c.avail.String() {
			t.Errorf("%s: Pick modified avail", c.name)
		}
	}
}

func TestFeasible(t *testing.T) {
	total := Resources{CPU: 2, Memory: 1 << 30}
	if !Feasible(total, Resources{CPU: 2}) || Feasible(total, Resources{CPU: 3}) || Feasible(total, Resources{"GPU": 1}) {
		t.Fatal("feasibility wrong")
	}
}

func BenchmarkPick(b *testing.B) {
	classes := []Candidate{{Demand: Resources{CPU: 1}, Count: 1000}, {Demand: Resources{CPU: 2}, Count: 10}, {Demand: Resources{"GPU": 1}, Count: 5}}
	avail := Resources{CPU: 2, Memory: 1 << 30}
	for b.Loop() {
		Pick(classes, avail, 2)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

func TestIdleToStopKeepsThePoolAndFreshWorkers(t *testing.T) {
	now := time.Unix(1000, 0)
	a, b, c := ids.NewWorkerID(), ids.NewWorkerID(), ids.NewWorkerID()
	idle := []IdleWorker{{a, now.Add(-5 * time.Second)}, {b, now.Add(-30 * time.Second)}, {c, now.Add(-time.Second)}}
	cases := []struct {
		name    string
		surplus int
		timeout time.Duration
		want    []ids.WorkerID
	}{
		{"longest idle first, bounded by surplus", 1, 2 * time.Second, []ids.WorkerID{b}},
		{"only those past the timeout", 3, 2 * time.Second, []ids.WorkerID{b, a}},
		{"no surplus, no stop", 0, 0, nil},
		{"none idle long enough", 3, time.Minute, nil},
	}
	for _, tc := range cases {
		if got := IdleToStop(now, idle, tc.surplus, tc.timeout); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
