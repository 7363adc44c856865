package raylet

import (
	"slices"
	"testing"
)

func TestPickFillsResourcesInQueueOrder(t *testing.T) {
	cpu := func(n float64) Candidate { return Candidate{Demand: Resources{CPU: n}} }
	cases := []struct {
		name    string
		queue   []Candidate
		avail   Resources
		slots   int
		want    []int
		reasons []PendingReason
	}{
		{"two cpus two tasks", []Candidate{cpu(1), cpu(1), cpu(1)}, Resources{CPU: 2}, 8, []int{0, 1},
			[]PendingReason{"", "", PendingResources}},
		{"slots bound dispatch", []Candidate{cpu(1), cpu(1)}, Resources{CPU: 4}, 1, []int{0},
			[]PendingReason{"", PendingWorker}},
		{"big task does not block small ones", []Candidate{cpu(4), cpu(1)}, Resources{CPU: 2}, 8, []int{1},
			[]PendingReason{PendingResources, ""}},
		{"custom resources", []Candidate{{Demand: Resources{"GPU": 1}}, {Demand: Resources{CPU: 1, "GPU": 1}}},
			Resources{CPU: 2, "GPU": 1}, 8, []int{0}, []PendingReason{"", PendingResources}},
		{"actor creations need no slot", []Candidate{{Demand: Resources{CPU: 1}, NoSlot: true}, cpu(1)}, Resources{CPU: 2}, 0, []int{0},
			[]PendingReason{"", PendingWorker}},
		{"zero demand always fits", []Candidate{{Demand: Resources{}}}, Resources{}, 1, []int{0}, []PendingReason{""}},
	}
	for _, c := range cases {
		avail := c.avail.Clone()
		got, reasons := Pick(c.queue, c.avail, c.slots)
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
