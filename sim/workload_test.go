package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/sim"
	"github.com/atoll-runtime/atoll/sim/workloads"
)

// config is the configuration of the stock workload w on five nodes.
func config(seed uint64, w workloads.Workload) sim.Config {
	return sim.Config{Seed: seed, Nodes: 5, Checkers: w.Checkers, Released: w.Released}
}

func mustWorkload(t testing.TB, name string) workloads.Workload {
	t.Helper()
	w, ok := workloads.ByName(name)
	if !ok {
		t.Fatalf("no workload %q", name)
	}
	return w
}

func report(t *testing.T, res *sim.Result) {
	t.Helper()
	if res.Failure == nil {
		return
	}
	for _, l := range res.Tail[max(0, len(res.Tail)-80):] {
		t.Log(l)
	}
	t.Fatalf("%v\nschedule: %s", res, sim.FormatSchedule(res.Schedule))
}

func TestMixedNoFaults(t *testing.T) {
	w := mustWorkload(t, "mixed")
	cfg := config(3, w)
	cfg.NoFaults = true
	res := sim.Run(cfg, w.Run)
	report(t, res)
	if res.WorkloadErr != nil {
		t.Fatalf("workload: %v", res.WorkloadErr)
	}
	if res.Stats.Spilled == 0 {
		t.Errorf("nothing spilled: %+v", res.Stats)
	}
	t.Log(res, res.Stats)
}

func TestKVNoFaults(t *testing.T) {
	w := mustWorkload(t, "kv")
	cfg := config(1, w)
	cfg.NoFaults = true
	res := sim.Run(cfg, w.Run)
	report(t, res)
	t.Log(res)
}

// TestMixedSeeds runs the first ten seeds of the mixed workload (with the
// race detector, under make test); make sim runs a hundred without it.
func TestMixedSeeds(t *testing.T) {
	w := mustWorkload(t, "mixed")
	for seed := uint64(1); seed <= 10; seed++ {
		res := sim.Run(config(seed, w), w.Run)
		t.Log(res)
		report(t, res)
	}
}

// TestDeterminism runs 8 seeds twice: each run's event log hash must be
// the same both times.
func TestDeterminism(t *testing.T) {
	w := mustWorkload(t, "mixed")
	for seed := uint64(1); seed <= 8; seed++ {
		a := sim.Run(config(seed, w), w.Run)
		b := sim.Run(config(seed, w), w.Run)
		if a.Hash != b.Hash || a.Events != b.Events {
			t.Errorf("seed %d: %v then %v", seed, a, b)
		}
	}
}

// TestFoundSchedules replays the shrunk schedules of bugs that sweeps of
// many seeds found, each of which failed before its fix.
// foundOnNodes: the schedules found on other than 5 nodes, by seed;
// foundDriverNode: those found with the driver off the head (the node's
// index, from 0).
var (
	foundOnNodes    = map[uint64]int{1300444: 3, 1700947: 4}
	foundDriverNode = map[uint64]int{1700947: 2, 1765629: 3}
)

func TestFoundSchedules(t *testing.T) {
	for _, c := range []struct {
		seed     uint64
		schedule string
		bug      string
		workload string // default mixed
	}{
		{51107, "82ms crash nodes=n3; 2.832s partition groups=n4,n5|n2,n3|n1 for=10.097s; 5.349s crash nodes=n5 for=4.728s keep-disk; 10.461s partition groups=n3,n5|n1,n2|n4 for=403ms",
			"a node that joined while cut off from NATS missed the frees sent meanwhile", ""},
		{62797, "224ms cut nodes=n4,n1 for=6.209s; 5.277s cut nodes=n1,n2 for=1.59s; 7.019s kill-worker nodes=n1; 16.012s cut nodes=n2,n1 for=2.976s; 18.22s kill-worker nodes=n1",
			"a fetch for a dead worker, waiting on another reader's pull, read the object after its owner freed it", ""},
		{62456, "4.915s crash nodes=n5 for=6.713s; 7.244s crash nodes=n3 for=2.589s keep-disk; 13.201s cut nodes=n2,n1 for=11.847s",
			"an actor call whose result was lost between nodes ran again on the same actor when its caller retried it", ""},
		{13193, "3.247s delay for=14.518s msg=ForwardActorCall@gateway p=0.086 count=13 delay=1.947s; 7.821s skew nodes=n1 delay=12.933s",
			"an actor call's first attempt, delayed on its way, ran after its retry had run", ""},
		{1101372, "8.616s partition groups=n1,n2,n3|n4,n5 for=2.027s; 11.8s partition groups=n2,n4|n1,n3|n5 for=8.372s; 12.265s partition groups=n1,n2,n3|n4,n5 for=7.238s; 15.507s skew nodes=n1 delay=-18.486s",
			"the simulator's fetcher, behind another creation of its object that was sealed then spilled, looped without waiting", ""},
		{470, "2.93s delay for=12.361s msg=TaskResult@owner p=0.26 count=10 delay=212ms",
			"a generator's item overtaken by the next one was dropped, and the stream hung held back by backpressure", "streams"},
		{11456, "5.531s delay for=4.91s msg=ForwardedResult@gateway p=0.218 count=10 delay=1.171s",
			"a generator's item overtaken by its attempt's result was dropped by the gateway, and what it stored stayed", "streams"},
		{20069, "1.751s drop for=12.122s msg=ForwardedResult@gateway p=0.186 count=16",
			"a generator's item lost between nodes left what it stored in the store after its stream ended", "streams"},
		{44079, "3.108s drop for=8.773s msg=ForwardedResult@gateway p=0.168 count=7",
			"a generator's item lost between nodes, then its cancelled attempt's result too, left what the item stored", "streams"},
		{508075, "3.301s delay for=2.731s msg=TaskResult@owner p=0.097 count=17 delay=1.271s; 3.495s kill-worker nodes=n1 p=0.196658204552407 count=1 point=after-execute; 3.837s store-full nodes=n1 count=1",
			"a generator's attempt killed after storing its last item, whose retry failed before reaching it, left that item stored", "streams"},
		{19, "11.358s partition groups=n2,n4,n5|n1,n3 for=212ms",
			"a placement group's RELEASE lost in a partition was never sent again: the node held the removed group's bundle for good", "groups"},
		{10204, "954ms partition groups=n2,n3|n1,n4|n5 for=3.784s; 3.713s crash nodes=n2 for=8.303s keep-disk; 6.29s partition groups=n1,n4,n5|n2,n3 for=7.881s",
			"a bundle released by an aborted transaction and prepared again on the same node counted as free room: its group's lost bundle was sent there, refused, for ever", "groups"},
		{119767, "338ms partition groups=n2,n4|n3,n5|n1 for=2.452s; 6.455s delay for=6.689s msg=PushTask@actor p=0.194 count=1 delay=1.299s; 17.138s partition groups=n1,n4,n5|n2,n3 for=6.698s",
			"a node that died after answering its commit, while another's answer was still to come, kept its bundle: the group was created with a bundle on a dead node, and the work placed there waited for ever", "groups"},
		{1100772, "2.213s delay for=5.155s msg=ForwardTask@gateway p=0.159 count=13 delay=1.903s; 3.299s skew nodes=n1 delay=11.128s",
			"a forwarded attempt failed as lost ran late on its node and stored its return there after the retry's: the gateway dropped its result, and the copy stayed", ""},
		{1300444, "364ms drop for=11.236s msg=ForwardActorCall@gateway p=0.224 count=19; 2.717s crash nodes=n2 for=5.459s; 13.414s kill-worker nodes=n3",
			"the simulated actor host dropped its gap timer when the actor restarted: calls held behind a lost one waited for ever (the real host's timer outlives restarts)", ""},
		{1502050, "884ms delay for=10.458s msg=SubmitTask@raylet p=0.235 count=6 delay=876ms; 1.059s partition groups=n4|n1,n2,n5|n3 for=254ms",
			"a task calling an actor still being created missed the event saying it started (its node cut off from NATS for 254 ms): its calls waited for ever", "kv"},
		{1700947, "237ms partition groups=n4|n1,n2,n3 for=4.189s; 2.755s partition groups=n1,n3|n4|n2 for=8.546s; 5.369s delay for=12.828s msg=ForwardTask@gateway p=0.183 count=9 delay=343ms; 8.613s delay for=11.145s msg=ForwardTask@gateway p=0.231 count=9 delay=1.093s; 9.131s partition groups=n2|n1,n3,n4 for=10.453s; 10.821s partition groups=n2|n4|n1,n3 for=2.004s; 15.129s partition groups=n1,n3,n4|n2| for=9.661s; 16.87s cut nodes=n4,n3 for=4.879s; 19.773s partition groups=n4|n2|n1,n3 for=5.239s",
			"two nodes that declared each other dead while the head reached both kept each other dead after the heal: one ignored the frees of the driver's node, and kept a copy another node's work brought it", ""},
		{1765629, "1.765s kill-worker nodes=n4",
			"an actor's pull of its call's argument, sent before the actor's process was killed, reached its source after the driver freed the argument: the checker took the late ask for a read after free", ""},
		// Written, not drawn from a seed: every notice of the first removal lost.
		{1, "2s drop for=3s msg=PlacementGroupInfo@raylet p=1 count=100",
			"a node that missed a group's removal notice kept a task placed in the removed group waiting for ever", "groups"},
	} {
		name := c.workload
		if name == "" {
			name = "mixed"
		}
		w := mustWorkload(t, name)
		t.Run(fmt.Sprintf("%s-%d", name, c.seed), func(t *testing.T) {
			s, err := sim.ParseSchedule(c.schedule)
			if err != nil {
				t.Fatal(err)
			}
			cfg := config(c.seed, w)
			cfg.Schedule = s
			if n, ok := foundOnNodes[c.seed]; ok {
				cfg.Nodes = n
			}
			cfg.DriverNode = foundDriverNode[c.seed]
			res := sim.Run(cfg, w.Run)
			t.Log(res)
			if res.Failure != nil {
				t.Errorf("the bug this schedule found is back: %s", c.bug)
			}
			report(t, res)
		})
	}
}

// TestGroupsSeeds runs the placement-group workload without faults, then
// on ten seeds twice each: every run passes and replays the same.
func TestGroupsSeeds(t *testing.T) { passesAndReplays(t, "groups") }

// TestStreamsSeeds runs the streaming generators' workload without
// faults, then on ten seeds twice each: every run passes and replays the
// same (the stream's tables iterate in a fixed order).
func TestStreamsSeeds(t *testing.T) { passesAndReplays(t, "streams") }

// passesAndReplays runs the workload named name without faults (it must
// return no error), then seeds 1 to 10 twice each: each must pass and
// give the same hash and events both times.
func passesAndReplays(t *testing.T, name string) {
	w := mustWorkload(t, name)
	cfg := config(1, w)
	cfg.NoFaults = true
	res := sim.Run(cfg, w.Run)
	report(t, res)
	if res.WorkloadErr != nil {
		t.Fatalf("workload: %v", res.WorkloadErr)
	}
	for seed := uint64(1); seed <= 10; seed++ {
		a := sim.Run(config(seed, w), w.Run)
		report(t, a)
		b := sim.Run(config(seed, w), w.Run)
		if a.Hash != b.Hash || a.Events != b.Events {
			t.Errorf("seed %d: %v then %v", seed, a, b)
		}
	}
}

// TestDriverOffHead runs every workload with the driver on n2 (its
// node partitioned and cut like the others, never crashed), on seeds 1
// to 10: each must pass.
func TestDriverOffHead(t *testing.T) {
	for _, name := range []string{"mixed", "streams", "groups", "kv"} {
		w := mustWorkload(t, name)
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 10; seed++ {
				cfg := config(seed, w)
				cfg.DriverNode = 1
				report(t, sim.Run(cfg, w.Run))
			}
		})
	}
}

// A driver's node cut off from the head past the failure budget is
// declared dead and exits with the driver: the run ends there, a
// driver-lost verdict, not a hang ten simulated minutes later.
func TestDriverLost(t *testing.T) {
	w := mustWorkload(t, "mixed")
	s, err := sim.ParseSchedule("3s partition groups=n1,n3,n4,n5|n2 for=12s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(5, w)
	cfg.DriverNode, cfg.Schedule = 1, s
	res := sim.Run(cfg, w.Run)
	if res.Failure == nil || res.Failure.Checker != "driver-lost" || res.SimTime > time.Minute {
		t.Fatalf("got %v after %v; want driver-lost within a minute", res.Failure, res.SimTime)
	}
}
