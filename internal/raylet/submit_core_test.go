package raylet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestSubmitScenarios runs the scripted scenarios of testdata/submit/*.txt
// against a SubmitCore, the submitter's side of leases (go test
// ./internal/raylet -run SubmitScenarios -rewrite regenerates the
// expectations). Each command applies one event and prints the effects it
// produced; `state` prints the core. Names: t* tasks, w* workers. The
// clock starts at 0 and moves only with `tick`, which fires the timer if
// it is due. After every command the harness checks the core's
// accounting and that no attempt is answered twice.
//
//	submitter [depth=N] [linger=D] [steal=D] [max-requests=N]
//	submit t1..t5 [cpu=N] [binary=PATH] [attempt=N]
//	grant req=N lease=N worker=w1 | refuse req=N
//	finish t1 | recalled t3 [started] | cancel t1
//	recall-lease lease=N | blocked lease=N | resumed lease=N | lost lease=N
//	tick 10ms | state
func TestSubmitScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/submit", func(t *testing.T, path string) {
		e := &submitEnv{names: map[string]ids.ID16{}, labels: map[ids.ID16]string{}, answered: map[string]bool{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.run(t, d)
			if e.core != nil {
				e.check(t)
			}
			return out
		})
	})
}

type submitEnv struct {
	core     *SubmitCore
	epoch    time.Time
	now      time.Time
	timerAt  []time.Time
	names    map[string]ids.ID16
	labels   map[ids.ID16]string
	answered map[string]bool // task/attempt answered (finished, failed, crashed)
}

func (e *submitEnv) id(name string) ids.ID16 {
	if id, ok := e.names[name]; ok {
		return id
	}
	var id ids.ID16
	copy(id[:], name)
	e.names[name], e.labels[id] = id, name
	return id
}

func (e *submitEnv) label(id ids.ID16) string {
	if l, ok := e.labels[id]; ok {
		return l
	}
	return id.Short()
}

func (e *submitEnv) answer(t *testing.T, d *DirectTask, how string) {
	key := fmt.Sprintf("%s/%d", e.label(d.ID()), d.Spec.Attempt)
	if e.answered[key] {
		t.Fatalf("%s answered twice (%s)", key, how)
	}
	e.answered[key] = true
}

func (e *submitEnv) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "submitter" && e.core == nil {
		t.Fatalf("%s: the script must start with submitter", d.Pos)
	}
	c := e.core
	var out strings.Builder
	scanInt := func(key string) int {
		var n int
		d.ScanArgs(t, key, &n)
		return n
	}
	switch d.Cmd {
	case "submitter":
		// Short tasks' deeper pipelines are off unless a script sets
		// short= (their own script: short.txt).
		cfg := SubmitConfig{PipelineDepth: 4, ShortTask: -1}
		d.MaybeScanArgs(t, "depth", &cfg.PipelineDepth)
		d.MaybeScanArgs(t, "max-requests", &cfg.MaxRequests)
		for _, kv := range []struct {
			key string
			to  *time.Duration
		}{{"linger", &cfg.Linger}, {"steal", &cfg.StealAfter}, {"short", &cfg.ShortTask}} {
			if d.HasArg(kv.key) {
				var s string
				d.ScanArgs(t, kv.key, &s)
				v, err := time.ParseDuration(s)
				if err != nil {
					t.Fatal(err)
				}
				*kv.to = v
			}
		}
		e.epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		e.now = e.epoch
		e.core = NewSubmitCore(cfg)
	case "submit":
		cpu, attempt := 1.0, 0
		d.MaybeScanArgs(t, "cpu", &cpu)
		d.MaybeScanArgs(t, "attempt", &attempt)
		for _, name := range taskRange(t, d.CmdArgs[0].Key) {
			spec := &atollpb.TaskSpec{TaskId: e.id(name).Bytes(), Type: atollpb.TaskType_NORMAL_TASK, Name: name, Function: name, NumReturns: 1, Attempt: int32(attempt),
				Resources: map[string]float64{CPU: cpu}}
			d.MaybeScanArgs(t, "binary", &spec.WorkerBinary)
			if !Leasable(spec) {
				t.Fatalf("%s is not leasable", name)
			}
			c.Submit(e.now, LeaseKey(spec), &DirectTask{Spec: spec})
		}
	case "grant":
		var w string
		d.ScanArgs(t, "worker", &w)
		c.Granted(e.now, uint64(scanInt("req")), uint64(scanInt("lease")), e.id(w))
	case "refuse":
		c.Refused(e.now, uint64(scanInt("req")), &atollpb.ErrorInfo{Code: atollpb.ErrorCode_INVALID_ARGUMENT, Message: "refused"})
	case "finish":
		dt := c.Holds(e.id(d.CmdArgs[0].Key))
		if dt == nil || dt.lease == nil {
			return "error: not in flight\n"
		}
		e.answer(t, dt, "finished")
		c.Finished(e.now, dt.lease.id, dt.ID(), dt.Spec.Attempt)
	case "recalled":
		dt := c.Holds(e.id(d.CmdArgs[0].Key))
		if dt == nil || dt.lease == nil || !dt.recalling {
			return "error: no recall of it on its way\n"
		}
		c.Recalled(e.now, dt.lease.id, dt.ID(), dt.Spec.Attempt, !d.HasArg("started"))
	case "cancel":
		if !c.Cancel(e.now, e.id(d.CmdArgs[0].Key), false) {
			out.WriteString("not held\n")
		}
	case "recall-lease":
		c.Recall(e.now, uint64(scanInt("lease")))
	case "blocked", "resumed":
		c.Blocked(e.now, uint64(scanInt("lease")), d.Cmd == "blocked")
	case "lost":
		id := uint64(scanInt("lease"))
		if l := c.leases[id]; l != nil {
			for _, dt := range l.inflight { // the shell reports them crashed
				e.answer(t, dt, "crashed")
				fmt.Fprintf(&out, "crashed %s attempt=%d\n", e.label(dt.ID()), dt.Spec.Attempt)
			}
		}
		c.Lost(e.now, id)
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		until := e.now.Add(dur)
		for {
			slices.SortFunc(e.timerAt, func(a, b time.Time) int { return a.Compare(b) })
			if len(e.timerAt) == 0 || e.timerAt[0].After(until) {
				break
			}
			e.now = e.timerAt[0]
			e.timerAt = e.timerAt[1:]
			fmt.Fprintf(&out, "tick at %s\n", e.now.Sub(e.epoch))
			c.Tick(e.now)
			e.drain(t, &out)
		}
		e.now = until
	case "state":
		return e.state()
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	e.drain(t, &out)
	if out.Len() == 0 {
		return "(no effects)\n"
	}
	return out.String()
}

func (e *submitEnv) tasks(ts []*DirectTask) string {
	names := make([]string, len(ts))
	for i, dt := range ts {
		names[i] = e.label(dt.ID())
		if dt.recalling {
			names[i] += "(recalling)"
		}
		if dt.cancelled {
			names[i] += "(cancelled)"
		}
	}
	return strings.Join(names, " ")
}

func (e *submitEnv) drain(t *testing.T, out *strings.Builder) {
	for _, eff := range e.core.Effects() {
		switch x := eff.(type) {
		case *PushDirect:
			fmt.Fprintf(out, "push %s (lease %d): %s", e.label(x.Worker), x.Lease, e.tasks(x.Tasks))
			if x.Before > 0 {
				fmt.Fprintf(out, " (behind %d)", x.Before)
			}
		case AskLease:
			fmt.Fprintf(out, "ask-lease req=%d like %s", x.Request, x.Spec.Name)
		case DropLeaseRequest:
			fmt.Fprintf(out, "drop-request req=%d", x.Request)
		case GiveBack:
			fmt.Fprintf(out, "give-back lease %d (%s)", x.Lease, e.label(x.Worker))
		case RecallDirect:
			fmt.Fprintf(out, "recall %s from lease %d", e.label(x.Task.ID()), x.Lease)
		case CancelDirect:
			fmt.Fprintf(out, "cancel %s on lease %d", e.label(x.Task.ID()), x.Lease)
		case FailDirect:
			e.answer(t, x.Task, "failed")
			if x.Cancelled {
				fmt.Fprintf(out, "fail %s: cancelled", e.label(x.Task.ID()))
			} else {
				fmt.Fprintf(out, "fail %s: %s", e.label(x.Task.ID()), x.Err.GetCode())
			}
		case ArmSubmitTimer:
			e.timerAt = append(e.timerAt, e.now.Add(x.After))
			fmt.Fprintf(out, "timer in %s", x.After)
		default:
			fmt.Fprintf(out, "unknown effect %T", eff)
		}
		out.WriteByte('\n')
	}
}

func (e *submitEnv) state() string {
	c := e.core
	var b strings.Builder
	st := c.Stats()
	fmt.Fprintf(&b, "at %s: %d queued, %d in flight, %d leases, %d requests\n", e.now.Sub(e.epoch), st.Queued, st.InFlight, st.Leases, st.Requests)
	keys := make([]string, 0, len(c.classes))
	for k := range c.classes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cl := c.classes[k]
		fmt.Fprintf(&b, "class %q: queue [%s] requests %v\n", k, e.tasks(cl.queue), cl.requests)
		for _, l := range cl.leases {
			fmt.Fprintf(&b, "  lease %d on %s: [%s]", l.id, e.label(l.worker), e.tasks(l.inflight))
			if l.recalled {
				b.WriteString(" recalled")
			}
			if l.blocked {
				b.WriteString(" blocked")
			}
			if !l.idleSince.IsZero() {
				fmt.Fprintf(&b, " idle since %s", l.idleSince.Sub(e.epoch))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// check verifies the core's accounting: every task held is queued once or
// in flight once on the lease it names, and leases are where they say.
func (e *submitEnv) check(t *testing.T) {
	t.Helper()
	c := e.core
	seen := map[*DirectTask]bool{}
	for key, cl := range c.classes {
		if cl.key != key {
			t.Fatalf("class %q filed under %q", cl.key, key)
		}
		for _, dt := range cl.queue {
			if seen[dt] || dt.lease != nil || c.byID[dt.ID()] != dt {
				t.Fatalf("queued task %s: seen %v, lease %v, held %v", e.label(dt.ID()), seen[dt], dt.lease != nil, c.byID[dt.ID()] == dt)
			}
			seen[dt] = true
		}
		for _, l := range cl.leases {
			if c.leases[l.id] != l || l.class != cl || l.returned {
				t.Fatalf("lease %d of class %q is not held", l.id, key)
			}
			most := c.cfg.PipelineDepth
			if c.cfg.ShortTask > 0 && most > 1 {
				most *= 2 // its class's tasks ran short when it was filled
			}
			if len(l.inflight) > most {
				t.Fatalf("lease %d holds %d tasks, at most %d", l.id, len(l.inflight), most)
			}
			for _, dt := range l.inflight {
				if seen[dt] || dt.lease != l || c.byID[dt.ID()] != dt {
					t.Fatalf("task %s in flight on lease %d: seen %v, lease %v", e.label(dt.ID()), l.id, seen[dt], dt.lease)
				}
				seen[dt] = true
			}
		}
	}
	if len(seen) != len(c.byID) {
		t.Fatalf("%d tasks held, %d queued or in flight", len(c.byID), len(seen))
	}
	n := 0
	for _, cl := range c.classes {
		n += len(cl.leases)
	}
	if n != len(c.leases) {
		t.Fatalf("%d leases held, the classes hold %d", len(c.leases), n)
	}
}

// A queued task's record stays at 72 bytes (made 16 to a run, package slab): a
// million are held at once when a driver submits them in a burst.
func TestDirectTaskSize(t *testing.T) {
	if n := unsafe.Sizeof(DirectTask{}); n > 72 {
		t.Fatalf("DirectTask is %d bytes, want at most 72", n)
	}
}
