package raylet

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestCoreScenarios runs the scripted scenarios of testdata/core/*.txt
// against a Core (go test ./internal/raylet -run CoreScenarios -rewrite
// regenerates the expectations). Each command applies one event and
// prints the effects it produced, one per line, then the queue spans'
// new pending reasons; `state` prints the Core. Names: t* tasks, w*
// workers (numbered as the Core starts them, actor hosts included), a*
// actors, o* objects, n* nodes (n1 is this node). The clock starts at 0
// and moves only with `tick`, which fires the timers due. After every
// command the harness checks the Core's accounting (checkInvariants) and
// that no attempt ends twice. See run for the commands.
func TestCoreScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/core", func(t *testing.T, path string) {
		e := &coreEnv{names: map[string]ids.ID16{}, labels: map[ids.ID16]string{}, ended: map[*Assignment]bool{}, pushed: map[ids.TaskID]*Assignment{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.run(t, d)
			if e.core != nil {
				e.checkInvariants(t)
			}
			return out
		})
	})
}

// coreEnv drives one Core through a script.
type coreEnv struct {
	core    *Core
	epoch   time.Time
	now     time.Time
	names   map[string]ids.ID16
	labels  map[ids.ID16]string
	workers int
	timers  []armed
	// ended are the attempts reported Done or Returned.
	ended map[*Assignment]bool
	// pushed is the last attempt of each task pushed to a worker.
	pushed  map[ids.TaskID]*Assignment
	pending []string // queue span events of the current step
	fatal   string
}

// armed is a timer the Core armed and has not fired yet.
type armed struct {
	at    time.Time
	timer Timer
}

// id names things with fixed ids, so the Core's output is deterministic.
func (e *coreEnv) id(name string) ids.ID16 {
	if id, ok := e.names[name]; ok {
		return id
	}
	var id ids.ID16
	copy(id[:], name)
	e.names[name], e.labels[id] = id, name
	return id
}

func (e *coreEnv) label(id ids.ID16) string {
	if l, ok := e.labels[id]; ok {
		return l
	}
	return id.Short()
}

func (e *coreEnv) objectID(name string) ids.ObjectID { return ids.ReturnObjectID(e.id(name), 0) }

var owner = &actor.PID{Id: "owner"}

func (e *coreEnv) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "node" && e.core == nil {
		t.Fatalf("%s: the script must start with node", d.Pos)
	}
	c := e.core
	var out strings.Builder
	switch d.Cmd {
	case "node":
		e.newNode(t, d)
	case "submit": // submit t1 ... or submit t3..t6 ... (one task each)
		for _, name := range taskRange(t, d.CmdArgs[0].Key) {
			c.Submit(e.now, e.submission(t, d, name), owner)
		}
	case "finish": // finish t1 [error] [undelivered] [late]
		a := e.attempt(d)
		if a == nil {
			return "error: not running\n"
		}
		res := &atollpb.TaskResult{TaskId: a.spec.TaskId, Attempt: a.spec.Attempt}
		if d.HasArg("error") {
			res.Error = &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: "boom"}
		}
		c.Finished(e.now, a.worker, a.attemptID, res, !d.HasArg("undelivered"))
	case "block", "unblock":
		c.Blocked(e.now, e.id(d.CmdArgs[0].Key), d.Cmd == "block")
	case "recalled": // recalled t2 [started] [late]
		a := e.attempt(d)
		if a == nil || !d.HasArg("late") && !e.core.running[a.task].recalling {
			return "error: no recall of it is on its way\n"
		}
		c.Recalled(e.now, a.worker, a.attemptID, !d.HasArg("started"))
	case "cancel": // cancel t1 [attempt=N] [non-recursive]
		m := &atollpb.CancelTask{TaskId: e.id(d.CmdArgs[0].Key).Bytes(), NonRecursive: d.HasArg("non-recursive")}
		if d.HasArg("attempt") {
			var n int
			d.ScanArgs(t, "attempt", &n)
			m.OneAttempt, m.Attempt = true, int32(n)
		}
		c.Cancel(e.now, m)
	case "kill-worker": // kill-worker w1 | kill-worker task=t1 [reason=...]
		m := &atollpb.KillWorker{}
		if d.HasArg("task") {
			var task string
			d.ScanArgs(t, "task", &task)
			m.TaskId = e.id(task).Bytes()
		} else {
			m.WorkerId = e.id(d.CmdArgs[0].Key).Bytes()
		}
		d.MaybeScanArgs(t, "reason", &m.Reason)
		c.KillWorker(e.now, m)
	case "worker-exit": // worker-exit w1 [early] [reason=...]
		reason := "exited"
		d.MaybeScanArgs(t, "reason", &reason)
		c.WorkerExited(e.now, e.id(d.CmdArgs[0].Key), reason, d.HasArg("early"))
	case "tick": // tick 10s: fires the timers due, each at its time
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		e.tick(&out, e.now.Add(dur))
	case "peers": // one line per peer: n2 total=CPU:4 avail=CPU:2 [queued=1]
		c.PeerView(e.now, e.peers(t, d.Input))
	case "drain": // drain [if-idle]: prints why a drain if idle was refused
		if busy := c.Drain(e.now, d.HasArg("if-idle")); busy != "" {
			out.WriteString("busy: " + busy + "\n")
		}
	case "node-gone":
		c.NodeGone(e.now, e.id(d.CmdArgs[0].Key))
	case "ack": // ack t1 [attempt=N] [hops=N]
		var attempt, hops int
		d.MaybeScanArgs(t, "attempt", &attempt)
		d.MaybeScanArgs(t, "hops", &hops)
		c.GeneratorAck(e.now, &atollpb.GeneratorAck{TaskId: e.id(d.CmdArgs[0].Key).Bytes(), Attempt: int32(attempt)}, int32(hops))
	case "actor-started": // actor-started a1 [error=...]
		var err error
		if d.HasArg("error") {
			var msg string
			d.ScanArgs(t, "error", &msg)
			err = fmt.Errorf("%s", msg)
		}
		c.ActorStarted(e.now, e.id(d.CmdArgs[0].Key), err)
	case "actor-failed": // actor-failed a1 restarts=N [restarted] [reason=...]
		var restarts int
		reason := "crash"
		d.ScanArgs(t, "restarts", &restarts)
		d.MaybeScanArgs(t, "reason", &reason)
		c.ActorFailed(e.now, e.id(d.CmdArgs[0].Key), reason, d.HasArg("restarted"), restarts)
	case "actor-terminated": // actor-terminated a1 [spent=...]
		var spent any
		if d.HasArg("spent") {
			var s string
			d.ScanArgs(t, "spent", &s)
			spent = s
		}
		c.ActorTerminated(e.now, e.id(d.CmdArgs[0].Key), spent)
	case "kill-actor": // kill-actor a1 [no-restart] [local] [reason=...]
		m := &atollpb.KillActor{ActorId: e.id(d.CmdArgs[0].Key).Bytes(), NoRestart: d.HasArg("no-restart")}
		d.MaybeScanArgs(t, "reason", &m.Reason)
		c.KillActor(e.now, m, d.HasArg("local"))
	case "lease-request": // lease-request h1 req=N [cpu=N] [res=...] [binary=PATH] (the class of a task like submit's)
		var req int
		d.ScanArgs(t, "req", &req)
		spec := e.submission(t, d, "lease-example").Spec
		spec.TaskId = nil
		c.RequestLease(e.now, d.CmdArgs[0].Key, uint64(req), spec)
	case "lease-cancel": // lease-cancel h1 req=N
		var req int
		d.ScanArgs(t, "req", &req)
		c.CancelLeaseRequest(e.now, d.CmdArgs[0].Key, uint64(req))
	case "lease-return": // lease-return w1 lease=N
		var l int
		d.ScanArgs(t, "lease", &l)
		c.ReturnLease(e.now, e.id(d.CmdArgs[0].Key), uint64(l))
	case "lease-use": // lease-use w1 lease=N pushed=N finished=N
		var l, pushed, finished int
		d.ScanArgs(t, "lease", &l)
		d.MaybeScanArgs(t, "pushed", &pushed)
		d.MaybeScanArgs(t, "finished", &finished)
		c.LeaseUse(e.now, e.id(d.CmdArgs[0].Key), uint64(l), pushed, finished)
	case "worker-blocked", "worker-unblocked": // worker-blocked w1 task=t1
		var task string
		d.ScanArgs(t, "task", &task)
		c.WorkerBlocked(e.now, e.id(d.CmdArgs[0].Key), e.id(task), d.Cmd == "worker-blocked")
	case "prepare", "commit", "release": // prepare pg1 0=CPU:1 1=CPU:1,GPU:1 | commit pg1 0 1 | release pg1 0 [reason=...]
		pg := e.id(d.CmdArgs[0].Key)
		var refs []*atollpb.BundleRef
		for _, a := range d.CmdArgs[1:] {
			if a.Key == "reason" {
				continue
			}
			i, err := strconv.Atoi(a.Key)
			if err != nil {
				t.Fatalf("%s: bad bundle %q", d.Pos, a.Key)
			}
			refs = append(refs, &atollpb.BundleRef{PlacementGroupId: pg.Bytes(), Index: int32(i), Resources: parseResources(t, strings.Join(a.Vals, ","))})
		}
		var refused string
		var err error
		switch d.Cmd {
		case "prepare":
			refused, err = c.PrepareBundles(e.now, refs)
		case "commit":
			refused, err = c.CommitBundles(e.now, refs)
		default:
			var reason string
			d.MaybeScanArgs(t, "reason", &reason)
			err = c.ReleaseBundles(e.now, refs, reason)
		}
		if err != nil {
			out.WriteString("error: " + err.Error() + "\n")
		}
		if refused != "" {
			out.WriteString("refused: " + refused + "\n")
		}
	case "pg-removed": // pg-removed pg1
		c.PlacementGroupRemoved(e.now, e.id(d.CmdArgs[0].Key), "removed")
	case "demands":
		for _, dm := range c.Demands() {
			fmt.Fprintf(&out, "%s x%d", Resources(dm.Resources), dm.Count)
			if dm.Infeasible {
				out.WriteString(" infeasible")
			}
			if dm.Actors {
				out.WriteString(" actors")
			}
			out.WriteByte('\n')
		}
		return e.relabel(out.String())
	case "state":
		return e.relabel(e.state())
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	e.drain(&out)
	if e.fatal != "" {
		t.Fatal(e.fatal)
	}
	if out.Len() == 0 {
		return "(no effects)\n"
	}
	return e.relabel(out.String())
}

// relabel replaces the hex ids of named things in s (the groups' resource
// names hold them) with their names.
func (e *coreEnv) relabel(s string) string {
	for name, id := range e.names {
		s = strings.ReplaceAll(s, id.String(), name)
	}
	for name, id := range e.names {
		s = strings.ReplaceAll(s, id.Short(), name)
	}
	return s
}

// newNode starts a Core: node [cpu=N] [res=K:V,...] [workers=N] [max=N]
// [depth=N] [store=BYTES] [frac=F] [saturation=F|inf] [idle=D] [process]
// [binary=PATH] [cluster].
func (e *coreEnv) newNode(t *testing.T, d *datadriven.TestData) {
	cpu, depth, maxWorkers, store := 1.0, 1, 16, 0
	frac, saturation, idle, binary, res := "0.7", "1", "10s", "", ""
	d.MaybeScanArgs(t, "cpu", &cpu)
	d.MaybeScanArgs(t, "res", &res)
	workers := int(cpu)
	d.MaybeScanArgs(t, "workers", &workers)
	d.MaybeScanArgs(t, "max", &maxWorkers)
	d.MaybeScanArgs(t, "depth", &depth)
	d.MaybeScanArgs(t, "store", &store)
	d.MaybeScanArgs(t, "frac", &frac)
	d.MaybeScanArgs(t, "saturation", &saturation)
	d.MaybeScanArgs(t, "idle", &idle)
	d.MaybeScanArgs(t, "binary", &binary)
	resources := parseResources(t, res)
	resources[CPU] = cpu
	cfg := CoreConfig{
		NodeID: e.id("n1"), Resources: resources, NumWorkers: workers, MaxWorkers: maxWorkers,
		StoreCapacity: uint64(store), PipelineDepth: depth, Processes: d.HasArg("process") || binary != "", Binary: binary,
		Cluster: d.HasArg("cluster"), Tracer: e,
		NewWorkerID: func() ids.WorkerID { e.workers++; return e.id(fmt.Sprintf("w%d", e.workers)) },
	}
	var err error
	if cfg.ArgsFraction, err = strconv.ParseFloat(frac, 64); err != nil {
		t.Fatal(err)
	}
	if cfg.Saturation, err = strconv.ParseFloat(saturation, 64); err != nil {
		t.Fatal(err)
	}
	if cfg.IdleTimeout, err = time.ParseDuration(idle); err != nil {
		t.Fatal(err)
	}
	e.workers, e.timers = 0, nil // a script may start another node
	e.epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e.now = e.epoch
	e.core = NewCore(cfg)
	e.core.Start(e.now)
}

// submission is a SubmitTask: submit t1 [cpu=N] [res=K:V,...]
// [args=o1:100[@n2],...] [attempt=N] [fn=NAME] [binary=PATH] [generator]
// [forwarded] [hops=N] [spread] [affinity=n2] [soft]
// [actor=a1 [max-restarts=N] [detached] [owner-node=n2]].
func (e *coreEnv) submission(t *testing.T, d *datadriven.TestData, name string) *atollpb.SubmitTask {
	cpu, res, attempt, hops, fn := 1.0, "", 0, 0, name
	d.MaybeScanArgs(t, "cpu", &cpu)
	d.MaybeScanArgs(t, "res", &res)
	d.MaybeScanArgs(t, "attempt", &attempt)
	d.MaybeScanArgs(t, "hops", &hops)
	d.MaybeScanArgs(t, "fn", &fn)
	demand := parseResources(t, res)
	if cpu > 0 {
		demand[CPU] = cpu
	}
	spec := &atollpb.TaskSpec{TaskId: e.id(name).Bytes(), Name: name, Function: fn, Attempt: int32(attempt), NumReturns: 1,
		Resources: demand, Generator: d.HasArg("generator")}
	d.MaybeScanArgs(t, "binary", &spec.WorkerBinary)
	for _, a := range list(d, "args") {
		obj, rest, _ := strings.Cut(a, ":")
		size, node, _ := strings.Cut(rest, "@")
		n, err := strconv.ParseUint(size, 10, 64)
		if err != nil {
			t.Fatalf("bad argument %q", a)
		}
		ref := &atollpb.ObjectRef{ObjectId: e.objectID(obj).Bytes(), Size: n}
		if node != "" {
			ref.NodeId = e.id(node).Bytes()
		}
		spec.Args = append(spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: ref}})
		spec.NumDependencies++
	}
	switch {
	case d.HasArg("pg"): // pg=pg1 [bundle=N] (default any)
		var pg string
		bundle := -1
		d.ScanArgs(t, "pg", &pg)
		d.MaybeScanArgs(t, "bundle", &bundle)
		spec.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_PLACEMENT_GROUP, PlacementGroupId: e.id(pg).Bytes(), BundleIndex: int32(bundle)}
	case d.HasArg("spread"):
		spec.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_SPREAD}
	case d.HasArg("affinity"):
		var node string
		d.ScanArgs(t, "affinity", &node)
		spec.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, NodeId: e.id(node).Bytes(), Soft: d.HasArg("soft")}
	}
	if d.HasArg("actor") {
		var a string
		var restarts int
		d.ScanArgs(t, "actor", &a)
		d.MaybeScanArgs(t, "max-restarts", &restarts)
		spec.Type, spec.ActorId = atollpb.TaskType_ACTOR_CREATION_TASK, e.id(a).Bytes()
		spec.ActorCreation = &atollpb.ActorCreationSpec{ActorType: "A", Name: a, MaxRestarts: int32(restarts), Detached: d.HasArg("detached")}
		if d.HasArg("owner-node") {
			var n string
			d.ScanArgs(t, "owner-node", &n)
			spec.OwnerAddress = e.id(n).String()
		}
	}
	return &atollpb.SubmitTask{Spec: spec, Forwarded: d.HasArg("forwarded"), Hops: int32(hops)}
}

// groupName is a group's resource name in a script (CPU_group_0_pg1).
var groupName = regexp.MustCompile(`(_group_(?:[0-9]+_)?)([a-z][a-z0-9]*)`)

// taskRange expands "t3..t6" to t3, t4, t5, t6; another name is itself.
func taskRange(t *testing.T, arg string) []string {
	from, to, ok := strings.Cut(arg, "..")
	if !ok {
		return []string{arg}
	}
	prefix := strings.TrimRight(from, "0123456789")
	a, err1 := strconv.Atoi(from[len(prefix):])
	b, err2 := strconv.Atoi(strings.TrimPrefix(to, prefix))
	if err1 != nil || err2 != nil || b < a {
		t.Fatalf("bad task range %q", arg)
	}
	var names []string
	for i := a; i <= b; i++ {
		names = append(names, prefix+strconv.Itoa(i))
	}
	return names
}

// attempt is the running attempt of the task the command names or, with
// the argument late, the last one pushed (an answer arriving late); nil
// if there is none.
func (e *coreEnv) attempt(d *datadriven.TestData) *Assignment {
	id := e.id(d.CmdArgs[0].Key)
	if task := e.core.running[id]; task != nil {
		return task.assigned
	}
	if d.HasArg("late") {
		return e.pushed[id]
	}
	return nil
}

func (e *coreEnv) peers(t *testing.T, input string) []NodeView {
	var views []NodeView
	// A group's resources are written with its name (CPU_group_0_pg1):
	// the Core's hold its id.
	input = groupName.ReplaceAllStringFunc(input, func(m string) string {
		sub := groupName.FindStringSubmatch(m)
		return sub[1] + e.id(sub[2]).String()
	})
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		v := NodeView{ID: e.id(fields[0]), Total: Resources{}, Available: Resources{}}
		for _, f := range fields[1:] {
			k, val, _ := strings.Cut(f, "=")
			switch k {
			case "total":
				v.Total = parseResources(t, val)
			case "avail":
				v.Available = parseResources(t, val)
			case "queued":
				q, err := strconv.ParseFloat(val, 64)
				if err != nil {
					t.Fatal(err)
				}
				v.QueuedCPU = q
			default:
				t.Fatalf("bad peer field %q", f)
			}
		}
		views = append(views, v)
	}
	return views
}

// tick moves the clock to until, firing each timer due on the way at its
// time.
func (e *coreEnv) tick(out *strings.Builder, until time.Time) {
	for {
		i := -1
		for j, a := range e.timers {
			if !a.at.After(until) && (i < 0 || a.at.Before(e.timers[i].at)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		a := e.timers[i]
		e.timers = slices.Delete(e.timers, i, i+1)
		e.now = a.at
		fmt.Fprintf(out, "at %s: %s fires\n", e.clock(), timerName(a.timer))
		e.core.TimerFired(e.now, a.timer)
		e.drain(out)
	}
	e.now = until
}

func (e *coreEnv) clock() string { return e.now.Sub(e.epoch).String() }

func timerName(t Timer) string {
	switch t.Kind {
	case TimerReap:
		return "reap"
	case TimerRespawn:
		return "respawn " + t.Binary
	}
	return fmt.Sprintf("timer(%d)", t.Kind)
}

func list(d *datadriven.TestData, key string) []string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			var out []string
			for _, v := range a.Vals {
				out = append(out, strings.Split(v, ",")...)
			}
			return out
		}
	}
	return nil
}
