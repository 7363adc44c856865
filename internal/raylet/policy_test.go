package raylet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestPickScenarios runs the scripted scenarios of testdata/pick.txt
// (go test ./raylet -run Pick -rewrite regenerates the expectations).
//
//	pick avail=CPU:2 slots=4 root-slots=1 args-held=0 args-cap=100
//	demand=CPU:1 count=3 root
//	demand=CPU:1 count=2 args=60,60
//	----
//	dispatch=[...] reasons=[...]
func TestPickScenarios(t *testing.T) {
	datadriven.RunTest(t, "testdata/pick.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "pick" {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		var availS string
		lim := Limits{RootSlots: -1}
		var heldBytes, cap int
		var heldObjs string
		d.ScanArgs(t, "avail", &availS)
		d.MaybeScanArgs(t, "held", &heldObjs)
		held := map[ids.ObjectID]bool{}
		for _, label := range strings.Split(heldObjs, ",") {
			if label != "" {
				held[objectNamed(label)] = true
			}
		}
		lim.Held = func(id ids.ObjectID) bool { return held[id] }
		d.ScanArgs(t, "slots", &lim.FreeSlots)
		d.MaybeScanArgs(t, "root-slots", &lim.RootSlots)
		d.MaybeScanArgs(t, "args-held", &heldBytes)
		d.MaybeScanArgs(t, "args-cap", &cap)
		lim.ArgsHeld, lim.ArgsCap = uint64(heldBytes), uint64(cap)
		avail := parseResources(t, availS)
		var classes []Candidate
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			classes = append(classes, parseCandidate(t, line))
		}
		before := avail.String()
		dispatch, reasons := Pick(classes, avail, lim)
		if avail.String() != before {
			t.Fatal("Pick modified avail")
		}
		return fmt.Sprintf("dispatch=%v reasons=%q\n", dispatch, reasons)
	})
}

// objectNamed turns a scenario's object label into an id.
func objectNamed(label string) ids.ObjectID {
	var t ids.TaskID
	copy(t[:], label)
	return ids.ReturnObjectID(t, 0)
}

func parseResources(t *testing.T, s string) Resources {
	r := Resources{}
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

func parseCandidate(t *testing.T, line string) Candidate {
	c := Candidate{Demand: Resources{}}
	for _, field := range strings.Fields(line) {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "demand":
			c.Demand = parseResources(t, v)
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			c.Count = n
		case "root":
			c.Root = true
		case "noslot":
			c.NoSlot = true
		case "args":
			// args=a:60,b:60/c:10 : per task (slash-separated) the objects
			// it reads as label:size; one label names one object.
			for _, task := range strings.Split(v, "/") {
				var args []ArgObject
				for _, a := range strings.Split(task, ",") {
					label, size, _ := strings.Cut(a, ":")
					n, err := strconv.ParseUint(size, 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					args = append(args, ArgObject{ID: objectNamed(label), Size: n})
				}
				c.Args = append(c.Args, args)
			}
		default:
			t.Fatalf("unknown class field %q", field)
		}
	}
	return c
}

func TestFeasible(t *testing.T) {
	total := Resources{CPU: 2, Memory: 1 << 30}
	if !Feasible(total, Resources{CPU: 2}) || Feasible(total, Resources{CPU: 3}) || Feasible(total, Resources{"GPU": 1}) {
		t.Fatal("feasibility wrong")
	}
}

func BenchmarkPick(b *testing.B) {
	classes := []Candidate{{Demand: Resources{CPU: 1}, Count: 1000, Root: true}, {Demand: Resources{CPU: 2}, Count: 10}, {Demand: Resources{"GPU": 1}, Count: 5}}
	avail := Resources{CPU: 2, Memory: 1 << 30}
	for b.Loop() {
		Pick(classes, avail, Limits{FreeSlots: 2, RootSlots: 2, ArgsCap: 1 << 30})
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

func TestResourcesTimes(t *testing.T) {
	for _, tc := range []struct {
		avail, demand Resources
		limit, want   int
	}{
		{Resources{CPU: 2}, Resources{CPU: 1}, 10, 2},
		{Resources{CPU: 2}, Resources{CPU: 0.5}, 10, 4},
		{Resources{CPU: 2}, Resources{CPU: 0.5}, 3, 3},
		{Resources{CPU: 2, "GPU": 1}, Resources{CPU: 1, "GPU": 1}, 10, 1},
		{Resources{CPU: 2}, Resources{"GPU": 1}, 10, 0},
		{Resources{CPU: -1}, Resources{CPU: 1}, 10, 0},
		{Resources{CPU: 0.3 * 3}, Resources{CPU: 0.3}, 10, 3}, // rounding as in Fits
		{Resources{CPU: 2}, Resources{}, 7, 7},
		{Resources{CPU: 2}, Resources{CPU: 0}, 7, 7},
	} {
		if got := tc.avail.Times(tc.demand, tc.limit); got != tc.want {
			t.Errorf("%v.Times(%v, %d) = %d, want %d", tc.avail, tc.demand, tc.limit, got, tc.want)
		}
	}
}

func TestTimelineKeepsTheLastEvents(t *testing.T) {
	tl := timeline{cap: TimelineCap}
	for i := range TimelineCap + 10 {
		tl.add(TaskEvent{Name: "t", Start: time.Unix(int64(i), 0)})
	}
	got := tl.snapshot()
	if len(got) != TimelineCap || got[0].Start.Unix() != 10 || got[len(got)-1].Start.Unix() != TimelineCap+9 {
		t.Fatalf("%d events from %d to %d; want the last %d, oldest first", len(got), got[0].Start.Unix(), got[len(got)-1].Start.Unix(), TimelineCap)
	}
}

func TestRespawnDelay(t *testing.T) {
	for _, c := range []struct {
		failures int
		want     time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {9, 25600 * time.Millisecond}, {10, 30 * time.Second}, {1000, 30 * time.Second}} {
		if got := respawnDelay(c.failures); got != c.want {
			t.Errorf("respawnDelay(%d) = %v, want %v", c.failures, got, c.want)
		}
	}
}
