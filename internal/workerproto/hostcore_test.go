package workerproto

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TestHostCoreScripts runs the scripted scenarios of testdata/hostcore
// (go test ./internal/workerproto -run HostCoreScripts -rewrite
// regenerates the expectations). Each command is one event of an actor
// host's core, and prints the effects it returned, one per line:
//
//	actor [max-concurrency=N] [depth=N] [groups=name:limit:m1+m2,...]
//	      [max-held=N] [gap=DUR] [max-callers=N] [idle=DUR]   a new core
//	arrive t1 [caller=c1 seq=N] [method=m] [group=g] [attempt=N] [lossy]
//	                          (lossy: its answer crosses the network)
//	ready                     the next incarnation runs its instance
//	finish t1 [attempt=N] [gen=N] [panicked]
//	                          its result comes back (then Pump if the
//	                          core says PumpDue, as the shell does;
//	                          panicked: the method panicked, then Crash
//	                          without a running call)
//	die                       the worker died (Crash, running)
//	advance DUR               time passes
//	tick                      the gap timer goes off
//	state                     the queues, calls in flight and callers
//
// Tasks are t*, callers c*; time starts at 0.
func TestHostCoreScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/hostcore", func(t *testing.T, path string) {
		e := &hostEnv{}
		e.reset(HostConfig{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.run(t, d)
			e.check(t)
			return out
		})
	})
}

type hostEnv struct {
	core  *HostCore
	now   time.Time
	gen   uint64
	specs map[string]*atollpb.TaskSpec
}

func (e *hostEnv) reset(cfg HostConfig) {
	e.core, e.now, e.gen, e.specs = NewHostCore(cfg), time.Unix(0, 0).UTC(), 0, map[string]*atollpb.TaskSpec{}
}

// name is a task's or caller's name back from its bytes.
func name(b []byte) string { return string(b) }

func (e *hostEnv) run(t *testing.T, d *datadriven.TestData) string {
	arg := func(key string, v any) bool {
		if !d.HasArg(key) {
			return false
		}
		d.ScanArgs(t, key, v)
		return true
	}
	first := ""
	if len(d.CmdArgs) > 0 && len(d.CmdArgs[0].Vals) == 0 {
		first = d.CmdArgs[0].Key
	}
	var fx []HostEffect
	switch d.Cmd {
	case "actor":
		spec := &atollpb.ActorCreationSpec{}
		var n int
		if arg("max-concurrency", &n) {
			spec.MaxConcurrency = int32(n)
		}
		cfg := HostConfig{Actor: spec}
		arg("depth", &cfg.PipelineDepth)
		arg("max-held", &cfg.MaxHeld)
		arg("max-callers", &cfg.MaxCallers)
		var dur string
		if arg("gap", &dur) {
			cfg.GapTimeout = mustDuration(t, dur)
		}
		if arg("idle", &dur) {
			cfg.CallerIdle = mustDuration(t, dur)
		}
		var groups string
		if arg("groups", &groups) {
			for _, g := range strings.Split(groups, ",") {
				parts := strings.Split(g, ":")
				var limit int
				fmt.Sscan(parts[1], &limit)
				cg := &atollpb.ConcurrencyGroup{Name: parts[0], MaxConcurrency: int32(limit)}
				if len(parts) > 2 {
					cg.Methods = strings.Split(parts[2], "+")
				}
				spec.ConcurrencyGroups = append(spec.ConcurrencyGroups, cg)
			}
		}
		e.reset(cfg)
		return fmt.Sprintf("concurrent=%v", e.core.Concurrent())
	case "arrive":
		spec := &atollpb.TaskSpec{TaskId: []byte(first), Name: first, Function: "A.m", Type: atollpb.TaskType_ACTOR_TASK}
		var caller, method, group string
		var seq, attempt int
		if arg("caller", &caller) {
			spec.CallerId = []byte(caller)
		}
		if arg("seq", &seq) {
			spec.SequenceNumber = uint64(seq)
		}
		if arg("method", &method) {
			spec.Function = "A." + method
		}
		if arg("group", &group) {
			spec.ConcurrencyGroup = group
		}
		if arg("attempt", &attempt) {
			spec.Attempt = int32(attempt)
		}
		e.specs[first] = spec
		fx = e.core.Arrive(e.now, &Call{Spec: spec, Caller: caller, Lossy: d.HasArg("lossy")})
	case "ready":
		e.gen++
		fx = e.core.Ready(e.now, e.gen)
	case "finish":
		gen := int(e.gen)
		arg("gen", &gen)
		var attempt int
		arg("attempt", &attempt)
		res := &atollpb.TaskResult{TaskId: []byte(first), Attempt: int32(attempt)}
		fx = e.core.Finish(uint64(gen), res)
		if d.HasArg("panicked") {
			fx = append(fx, e.core.Crash("a method panicked", false)...)
		} else if len(fx) > 0 {
			if _, due := fx[len(fx)-1].(PumpDue); due {
				fx = append(fx, e.core.Pump(e.now)...)
			}
		}
	case "die":
		fx = e.core.Crash("the worker died", true)
	case "advance":
		e.now = e.now.Add(mustDuration(t, first))
		return fmt.Sprintf("now %s", e.now.Sub(time.Unix(0, 0)))
	case "tick":
		fx = e.core.Tick(e.now)
	case "state":
		return e.state()
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return printEffects(fx)
}

func mustDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func printEffects(fx []HostEffect) string {
	if len(fx) == 0 {
		return "(no effects)"
	}
	var lines []string
	for _, f := range fx {
		switch f := f.(type) {
		case Send:
			line := "send " + callName(f.Call)
			if g := f.Call.Group(); g != "" {
				line += " [" + g + "]"
			}
			lines = append(lines, fmt.Sprintf("%s gen=%d", line, f.Call.gen))
		case Reply:
			lines = append(lines, fmt.Sprintf("reply %s to %v", callName(f.Call), f.Call.Caller))
			for _, a := range f.Call.Also() {
				lines = append(lines, fmt.Sprintf("  and %s to %v", callName(a), a.Caller))
			}
		case Fail:
			lines = append(lines, fmt.Sprintf("fail %s to %v: %s", callName(f.Call), f.Call.Caller, f.Reason))
		case Drop:
			switch f.Why {
			case DropRetryRuns:
				lines = append(lines, fmt.Sprintf("drop %s (another attempt runs; its answer answers this one)", callName(f.Call)))
				continue
			case DropSuperseded:
				lines = append(lines, fmt.Sprintf("drop %s (a later attempt took its place; its answer answers this one)", callName(f.Call)))
				continue
			}
			lines = append(lines, fmt.Sprintf("drop %s (%s seq %d delivered twice)", callName(f.Call), name(f.Call.Spec.CallerId), f.Call.Spec.SequenceNumber))
		case AlreadyRan:
			lines = append(lines, fmt.Sprintf("already-ran %s: answered %s, not run", callName(f.Call), AlreadyRanResult(f.Call.Spec).Error.GetCode()))
		case SkipGap:
			lines = append(lines, fmt.Sprintf("skip %s seq %d..%d", f.Caller, f.From, f.To))
		case ArmTimer:
			lines = append(lines, fmt.Sprintf("arm-timer %s", f.After))
		case PumpDue:
			lines = append(lines, "pump-due")
		default:
			lines = append(lines, fmt.Sprintf("%T", f))
		}
	}
	return strings.Join(lines, "\n")
}

func callName(c *Call) string {
	s := name(c.Spec.TaskId)
	if c.Spec.Attempt > 0 {
		s += fmt.Sprintf(".%d", c.Spec.Attempt)
	}
	return s
}

func (e *hostEnv) state() string {
	h := e.core
	var lines []string
	lines = append(lines, fmt.Sprintf("ready=%v gen=%d timer=%v", h.ready, h.gen, h.timer))
	for _, g := range h.groups.names {
		var q, f []string
		for _, c := range h.queues[g] {
			q = append(q, callName(c))
		}
		for _, c := range h.inflight {
			if c.group == g {
				f = append(f, callName(c))
			}
		}
		lines = append(lines, fmt.Sprintf("group %q window=%d queued=[%s] inflight=[%s]", g, h.groups.window[g], strings.Join(q, " "), strings.Join(f, " ")))
	}
	for _, id := range h.callerIDs() {
		o := h.callers[id]
		var held []string
		for seq, c := range o.held {
			held = append(held, fmt.Sprintf("%d:%s", seq, callName(c)))
		}
		slices.Sort(held)
		lines = append(lines, fmt.Sprintf("caller %s next=%d held=[%s]", id, o.next, strings.Join(held, " ")))
	}
	return strings.Join(lines, "\n")
}

// check verifies the core's invariants after every command: the counts
// per group match the calls in flight and stay within the windows; no
// call is both queued and in flight; held calls come after next; nothing
// is in flight while no incarnation is ready.
func (e *hostEnv) check(t *testing.T) {
	t.Helper()
	h := e.core
	count := map[string]int{}
	seen := map[*Call]bool{}
	for _, c := range h.inflight {
		count[c.group]++
		seen[c] = true
		if c.gen != h.gen {
			t.Fatalf("call %s in flight for incarnation %d, the core is at %d", callName(c), c.gen, h.gen)
		}
	}
	if !h.ready && len(h.inflight) > 0 {
		t.Fatalf("%d calls in flight with no incarnation ready", len(h.inflight))
	}
	for g, n := range count {
		if h.inGroup[g] != n || n > h.groups.window[g] {
			t.Fatalf("group %q: %d in flight, counted %d, window %d", g, n, h.inGroup[g], h.groups.window[g])
		}
	}
	for g, n := range h.inGroup {
		if n != count[g] {
			t.Fatalf("group %q counted %d in flight, %d are", g, n, count[g])
		}
	}
	for _, q := range h.queues {
		for _, c := range q {
			if seen[c] {
				t.Fatalf("call %s both queued and in flight", callName(c))
			}
		}
	}
	for id, o := range h.callers {
		for seq := range o.held {
			if seq <= o.next {
				t.Fatalf("caller %s holds seq %d, next is %d", id, seq, o.next)
			}
		}
	}
}
