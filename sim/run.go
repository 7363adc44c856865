package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// Config configures one simulated run. Zero fields take the defaults.
type Config struct {
	// Seed drives every choice of the run: the schedule of faults (unless
	// Schedule is given), latencies, which ready thread runs first, task
	// running times.
	Seed uint64
	// Nodes in the cluster (default 3); n1 is the head (GCS, and the
	// driver's process unless DriverNode says otherwise).
	Nodes int
	// DriverNode is the index of the node the driver's process runs on
	// (0, the default: the head, n1; 1: n2, ...). Neither the head nor
	// the driver's node is ever crashed; the driver's node is cut off,
	// partitioned and skewed like any other.
	DriverNode int
	// CPUs per node (default 2), the pool's workers.
	CPUs float64
	// StoreBytes per node's object store (default 1 MiB: small, so that
	// workloads spill); DiskBytes per spill disk (default 256 MiB).
	StoreBytes uint64
	DiskBytes  uint64
	// InlineThreshold: values up to it travel inline (default 4 KiB, so
	// that small workloads use the stores).
	InlineThreshold int
	// PipelineDepth of the raylets and actor hosts (default 4).
	PipelineDepth int
	MaxWorkers    int
	// FailureBudget: membership declares an unreachable node dead after it
	// (default 5s); ForwardLease: a forwarded attempt not confirmed for
	// it is lost (default 2x the budget); ConfirmInterval: gateways
	// confirm and expire leases (default 1s); ReportInterval: nodes
	// publish their load (default 1s: a real node's is 100ms, which would
	// be most of a run's events).
	FailureBudget   time.Duration
	ForwardLease    time.Duration
	ConfirmInterval time.Duration
	ReportInterval  time.Duration
	// AMMInterval: the head's Active Memory Manager runs a round this
	// often (default 2s, as a real head's; negative: never).
	AMMInterval time.Duration
	// TaskTime bounds an attempt's simulated running time (default
	// 50ms); Jitter a ready thread's wait before it runs (default 1ms).
	TaskTime time.Duration
	Jitter   time.Duration
	// Boot: the workload starts once the cluster ran this long (its
	// nodes heard each other; default 1s).
	Boot time.Duration
	// Deadline: the workload must return within it (simulated; default
	// 10 minutes), or the run fails as hung. Settle bounds the end phase
	// (faults healed, the driver gone) that must reach quiescence
	// (default 2 minutes).
	Deadline time.Duration
	Settle   time.Duration
	// Faults draws the schedule; Schedule, if not nil, is the schedule
	// instead (NoFaults: none at all).
	Faults   FaultConfig
	Schedule []Fault
	NoFaults bool
	// Released: the workload releases every ref it makes, so once it
	// returned and the cluster went quiet the driver must own nothing
	// (the "leak" checker).
	Released bool
	// Checkers judge the run's history once the workload returned and
	// the built-in checkers passed.
	Checkers []Checker
	// Log receives the full event log; Spans the run's spans (JSON
	// lines). Logger is the runtimes' logger (default: discard). Report
	// receives a program's verdict (atoll.WithSimulation; default stderr).
	Log    io.Writer
	Spans  io.Writer
	Logger *slog.Logger
	Report io.Writer
}

func (c Config) withDefaults() Config {
	if c.Nodes <= 0 {
		c.Nodes = 3
	}
	if c.DriverNode < 0 || c.DriverNode >= c.Nodes {
		c.DriverNode = 0
	}
	c.Faults.DriverNode = c.DriverNode
	if c.CPUs <= 0 {
		c.CPUs = 2
	}
	if c.StoreBytes == 0 {
		c.StoreBytes = 1 << 20
	}
	if c.DiskBytes == 0 {
		c.DiskBytes = 256 << 20
	}
	if c.InlineThreshold == 0 {
		c.InlineThreshold = 4 << 10
	}
	if c.PipelineDepth <= 0 {
		c.PipelineDepth = 4
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 64
	}
	if c.FailureBudget <= 0 {
		c.FailureBudget = 5 * time.Second
	}
	if c.ForwardLease <= 0 {
		c.ForwardLease = 2 * c.FailureBudget
	}
	if c.ConfirmInterval <= 0 {
		c.ConfirmInterval = cluster.DefaultConfirmInterval
	}
	if c.ReportInterval <= 0 {
		c.ReportInterval = time.Second
	}
	if c.AMMInterval == 0 {
		c.AMMInterval = cluster.DefaultAMMInterval
	}
	if c.TaskTime == 0 {
		c.TaskTime = 50 * time.Millisecond
	}
	if c.Jitter == 0 {
		c.Jitter = time.Millisecond
	}
	if c.Boot <= 0 {
		c.Boot = time.Second
	}
	if c.Deadline <= 0 {
		c.Deadline = 10 * time.Minute
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Workload is the driver's program: it runs on a thread of the
// simulation, and the SDK calls it makes with ctx (or a context derived
// from it) go to the simulated driver.
type Workload func(ctx context.Context) error

// Result is the outcome of one run.
type Result struct {
	Seed     uint64
	Schedule []Fault
	// Hash is the event log's hash: a replay of the same seed and
	// schedule on the same commit has the same one.
	Hash   string
	Events uint64
	// SimTime is the simulated time the run took; Wall the real time.
	SimTime time.Duration
	Wall    time.Duration
	// Failure is the first checker that failed (nil: every one passed).
	Failure *Failure
	// WorkloadErr is what the workload returned.
	WorkloadErr error
	// Tail is the event log's last lines (for a failure's report).
	Tail  []string
	Stats Stats
}

// Stats count what a run did.
type Stats struct {
	Attempts, Retries, ActorCalls, Faults, Messages, Dropped, Duplicated, Delayed, Lost uint64
	Spilled, Restored                                                                   uint64
	NodesUp                                                                             int
}

// Run runs workload on a fresh simulated cluster and checks it.
func Run(cfg Config, workload Workload) *Result {
	start := time.Now()
	cfg = cfg.withDefaults()
	w := newWorld(cfg)
	schedule := cfg.Schedule
	if schedule == nil && !cfg.NoFaults {
		schedule = Generate(cfg.Seed, cfg.Nodes, cfg.Faults)
	}
	res := &Result{Seed: cfg.Seed, Schedule: schedule}
	w.boot(schedule)
	defer w.shutdown()

	// The workload, on the driver's thread.
	driver := w.driver
	var done bool
	var werr error
	w.at(Epoch.Add(w.cfg.Boot), func() {
		w.spawn(driver, "driver", func(ctx context.Context) {
			werr = workload(runtime.WithRuntime(ctx, driver.rt))
			done = true
		})
	})
	limit := Epoch.Add(cfg.Boot + cfg.Deadline)
	switch ended := w.runUntil(limit, func() bool { return done || !driver.alive }); {
	case w.failure != nil:
	case ended && !done:
		// Only off the head: its node, declared dead, exited with it.
		w.fail("driver-lost", "the driver's node %s was declared dead and exited with the driver: the job ended before the workload returned", driver.node.name)
	case !ended:
		w.fail("hang", "the workload did not return within %v of simulated time; parked threads:%s", cfg.Deadline, w.parkedReport())
	}
	res.WorkloadErr = werr
	if w.failure == nil && werr != nil && !typedError(werr) {
		w.fail("workload", "%v", werr)
	}
	if w.failure == nil {
		w.end()
	}
	w.check.final()
	for _, c := range cfg.Checkers {
		if w.failure != nil {
			break
		}
		if err := c.Check(w.history); err != nil {
			w.fail(c.Name, "%v", err)
		}
	}
	res.Hash = w.log.Hash()
	res.Events = w.log.lines
	res.SimTime = since(w.now)
	res.Wall = time.Since(start)
	res.Failure = w.failure
	res.Tail = w.log.tail()
	res.Stats = w.stats()
	return res
}

func newWorld(cfg Config) *World {
	w := &World{cfg: cfg, now: Epoch, byNode: map[ids.NodeID]*node{}, procs: map[ids.WorkerID]*proc{}, byPID: map[string]*proc{},
		byName: map[string]*node{}, yield: make(chan struct{})}
	w.rSched, w.rNet, w.rDisk, w.rWork = stream(cfg.Seed, 1), stream(cfg.Seed, 2), stream(cfg.Seed, 3), stream(cfg.Seed, 4)
	w.log = newEventLog(&w.now, cfg.Log)
	w.net = newNetwork(w)
	w.check = newChecks(w)
	w.history = &History{w: w}
	w.trace = newTracer(w, cfg.Spans)
	return w
}

// boot brings the cluster up, the driver's process on the head, and
// starts the background: load reports, lease ticks, membership.
func (w *World) boot(schedule []Fault) {
	w.log.add("boot seed=%d nodes=%d faults=%d", w.cfg.Seed, w.cfg.Nodes, len(schedule))
	w.startFaults(schedule)
	for i := 0; i < w.cfg.Nodes; i++ {
		n := w.addNode(nil)
		if i == 0 {
			w.gcs = newGCS(w, n)
		}
	}
	w.driver = w.newProc(w.nodes[w.cfg.DriverNode], "driver", "driver", w.newID())
	w.every(w.cfg.ReportInterval, func() {
		for _, n := range w.liveNodes() {
			n.publishLoad()
		}
	})
	w.every(w.cfg.ConfirmInterval, func() {
		for _, n := range w.liveNodes() {
			n.leaseTick()
		}
	})
	w.every(250*time.Millisecond, w.membershipTick)
	w.every(pgTick, func() {
		if g := w.gcs; g != nil {
			g.pgTickNow()
		}
	})
	if w.cfg.AMMInterval > 0 {
		w.every(w.cfg.AMMInterval, w.ammRound)
	}
}

// end is the liveness phase: every fault heals and the cluster must go
// quiet; a workload that released its refs (Released) must have left the
// owners owning nothing; then the driver ends (its objects freed on every
// node, its actors and every other actor of the job killed), and the
// cluster must go quiet again, within Settle each time.
func (w *World) end() {
	w.faults.healAll()
	w.log.add("workload returned")
	w.settle()
	d := w.driver
	if w.cfg.Released {
		var stored []ids.ObjectID
		var pending int
		d.rt.SimOwner(func(t *owner.Table) { stored, pending = t.StoredIDs(), t.Stats().Tasks })
		if len(stored) > 0 || pending > 0 {
			var objs []string
			for _, id := range stored {
				objs = append(objs, id.Short())
			}
			w.fail("leak", "the workload released every ref, yet the driver still owns %d stored objects (%s) and waits for %d tasks",
				len(stored), strings.Join(first(objs, 5), " "), pending)
			return
		}
	}
	w.log.add("the driver ends")
	stored, actors := d.rt.SimStop()
	if len(stored) > 0 {
		d.node.broadcastFree(d, stored, false)
	}
	kill := func(id ids.ActorID, reason string) {
		m := &atollpb.KillActor{ActorId: id.Bytes(), NoRestart: true, Reason: reason}
		for _, to := range w.liveNodes() {
			to := to
			w.send(&msg{from: d.node, to: to, fromName: d.node.name + ".gw", toName: to.name, path: pathNATS, kind: "KillActor", actor: "raylet",
				desc: id.Short(), deliver: func() {
					to.raylet.KillActor(to.now(), m, true)
					to.rayletEffects()
				}})
		}
	}
	for _, id := range actors {
		kill(id, "its job ended")
	}
	// The job's other actors (made by its tasks) go with it too.
	if g := w.gcs; g != nil {
		for _, id := range sortedActorIDs(g.actors) {
			if a := g.actors[id]; a.State != atollpb.ActorState_ACTOR_DEAD {
				kill(id, "its job ended")
			}
		}
	}
	w.settle()
	w.driverOwns()
}

// settle runs until nothing but the background is pending, and at least
// a lease and a failure budget (expiries and verdicts due then happen
// first), or Settle passed.
func (w *World) settle() {
	minEnd := w.now.Add(w.cfg.ForwardLease + w.cfg.FailureBudget)
	limit := w.now.Add(w.cfg.Settle)
	for (w.now.Before(minEnd) || !w.quiet()) && !w.now.After(limit) {
		if !w.step() {
			break
		}
	}
}

// driverOwns closes the driver's process for the final checks (its
// table closed, it owns nothing).
func (w *World) driverOwns() { w.driver.alive = false }

// shutdown ends every thread still parked (their goroutines exit).
func (w *World) shutdown() {
	for _, t := range append([]*thread(nil), w.threads...) {
		if t.state == threadDone {
			continue
		}
		t.killed = true
		t.cancel(errThreadKilled)
		if t.state != threadRunning {
			w.run(t)
		}
	}
	w.threads = nil
}

func (w *World) stats() Stats {
	s := Stats{Attempts: w.check.attempts, Retries: w.check.retries, ActorCalls: w.check.calls, Faults: w.check.faultsHit,
		Messages: w.net.delivered, Dropped: w.net.dropped, Duplicated: w.net.duplicated, Delayed: w.net.delayed, Lost: w.net.lost}
	for _, n := range w.nodes {
		st := n.store.store.Stats()
		s.Spilled += st.GetSpilledBytesTotal()
		s.Restored += st.GetRestoredBytesTotal()
		if n.up {
			s.NodesUp++
		}
	}
	return s
}

// Replay describes how to run a result again.
func (r *Result) String() string {
	verdict := "PASS"
	if r.Failure != nil {
		verdict = "FAIL " + r.Failure.Error()
	}
	return fmt.Sprintf("seed %d: %s (%d faults, %d events, hash %s, sim %v, wall %v)", r.Seed, verdict, len(r.Schedule), r.Events, r.Hash,
		r.SimTime.Round(time.Millisecond), r.Wall.Round(time.Millisecond))
}
