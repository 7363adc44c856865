package raylet

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The scenario harness's output: effects printed one per line, the
// Core's state, and the accounting checked after every command.

// drain prints the Core's effects, applying those the shell answers at
// once (SpawnHost: the host's address), then the pending reasons.
func (e *coreEnv) drain(out *strings.Builder) {
	for {
		effects := e.core.Effects()
		if len(effects) == 0 {
			break
		}
		for _, eff := range effects {
			out.WriteString(e.format(eff))
			out.WriteByte('\n')
		}
	}
	for _, p := range e.pending {
		out.WriteString(p)
		out.WriteByte('\n')
	}
	e.pending = e.pending[:0]
}

func (e *coreEnv) task(a *Assignment) string { return e.label(a.task) }

func (e *coreEnv) end(a *Assignment, how string) {
	if e.ended[a] {
		e.fatal = fmt.Sprintf("attempt %d of %s ended twice (%s)", a.attemptID, e.task(a), how)
	}
	e.ended[a] = true
}

func (e *coreEnv) format(eff Effect) string {
	switch x := eff.(type) {
	case StartWorker:
		if x.Binary != "" {
			return fmt.Sprintf("start %s binary=%s", e.label(x.Worker), x.Binary)
		}
		return "start " + e.label(x.Worker)
	case StopWorker:
		return "stop " + e.label(x.Worker)
	case KillWorker:
		return fmt.Sprintf("kill %s (%s)", e.label(x.Worker), x.Reason)
	case ArmTimer:
		e.timers = append(e.timers, armed{at: e.now.Add(x.After), timer: x.Timer})
		return fmt.Sprintf("timer %s in %s", timerName(x.Timer), x.After)
	case Push:
		names := make([]string, len(x.Attempts))
		for i, a := range x.Attempts {
			names[i] = e.task(a)
			e.pushed[a.task] = a
		}
		s := fmt.Sprintf("push %s: %s", e.label(x.Worker), strings.Join(names, " "))
		if x.Before > 0 {
			s += fmt.Sprintf(" (behind %d)", x.Before)
		}
		return s
	case Recall:
		return fmt.Sprintf("recall %s from %s", e.task(x.Attempt), e.label(x.Attempt.worker))
	case Cancel:
		s := fmt.Sprintf("cancel %s on %s", e.task(x.Attempt), e.label(x.Attempt.worker))
		if x.NonRecursive {
			s += " non-recursive"
		}
		return s
	case Done:
		e.end(x.Attempt, "done")
		s := fmt.Sprintf("done %s on %s", e.task(x.Attempt), e.label(x.Attempt.worker))
		if x.Attempt.failed {
			s += " failed"
		}
		if d := x.Attempt.ended.Sub(x.Attempt.started); d > 0 {
			s += " ran " + d.String()
		}
		return s
	case Returned:
		e.end(x.Attempt, "returned")
		return fmt.Sprintf("returned %s from %s", e.task(x.Attempt), e.label(x.Attempt.worker))
	case Reply:
		r := x.Result
		s := fmt.Sprintf("reply %s attempt=%d: ", e.label(ids.MustFromBytes(r.TaskId)), r.Attempt)
		switch {
		case r.Error != nil:
			s += r.Error.Code.String()
		case r.ActorAddress != "":
			s += "actor at " + r.ActorAddress
		default:
			s += "ok"
		}
		return s
	case Forward:
		s := fmt.Sprintf("forward %s to %s hops=%d", e.label(ids.MustFromBytes(x.Spec.TaskId)), e.label(x.Node), x.Hops)
		if x.SpilledBack {
			s += " (spilled back)"
		}
		return s
	case CancelForwarded:
		return "cancel-forwarded " + e.label(x.Task)
	case AckGenerator:
		return fmt.Sprintf("ack %s to %s", e.label(ids.MustFromBytes(x.Ack.TaskId)), e.label(x.Worker))
	case ForwardGeneratorAck:
		return fmt.Sprintf("forward-ack %s hops=%d", e.label(ids.MustFromBytes(x.Ack.TaskId)), x.Hops)
	case KillRemoteActor:
		return "kill-remote " + e.label(ids.MustFromBytes(x.Msg.ActorId))
	case SpawnHost:
		e.core.HostSpawned(x.Actor, "host-"+e.label(x.Actor)) // the shell does it at once
		return fmt.Sprintf("spawn-host %s on %s", e.label(x.Actor), e.label(x.Worker))
	case StopHost:
		return "stop-host " + e.label(x.Actor)
	case CrashHost:
		return fmt.Sprintf("crash-host %s (%s)", e.label(x.Actor), x.Reason)
	case HostGone:
		return fmt.Sprintf("host-gone %s (%s)", e.label(x.Actor), e.label(x.Worker))
	case Grant:
		return fmt.Sprintf("grant %s to %v: lease %d for request %d", e.label(x.Worker), x.Holder, x.Lease, x.Request)
	case RecallLease:
		return fmt.Sprintf("recall-lease %d of %v on %s", x.Lease, x.Holder, e.label(x.Worker))
	case LeaseBlocked:
		if x.Blocked {
			return fmt.Sprintf("lease-blocked %d of %v on %s", x.Lease, x.Holder, e.label(x.Worker))
		}
		return fmt.Sprintf("lease-resumed %d of %v on %s", x.Lease, x.Holder, e.label(x.Worker))
	case LeaseLost:
		return fmt.Sprintf("lease-lost %d of %v on %s (%s)", x.Lease, x.Holder, e.label(x.Worker), x.Reason)
	case LeaseRefused:
		return fmt.Sprintf("lease-refused %v request %d: %s", x.Holder, x.Request, x.Err.GetCode())
	case ReportActor:
		i := x.Info
		s := fmt.Sprintf("report %s %s restarts=%d", e.label(ids.MustFromBytes(i.ActorId)), strings.TrimPrefix(i.State.String(), "ACTOR_"), i.NumRestarts)
		if i.DeathCause != nil {
			s += fmt.Sprintf(" cause=%q", i.DeathCause.Message)
		}
		return s
	}
	return fmt.Sprintf("unknown effect %T", eff)
}

// state prints the Core: its resources, queue, workers, actors and
// counters.
func (e *coreEnv) state() string {
	c := e.core
	var b strings.Builder
	fmt.Fprintf(&b, "at %s: available %s; %d queued, %d running, args held %d, running roots %d\n",
		e.clock(), c.avail, c.queued, len(c.running), c.argsHeld, c.runningRoots)
	if len(c.bundles) > 0 {
		fmt.Fprintf(&b, "total %s\n", c.total)
		for _, h := range c.Bundles() {
			b.WriteString("bundle " + e.label(ids.MustFromBytes(h.PlacementGroupId)) + fmt.Sprintf("/%d", h.Index))
			if h.Committed {
				b.WriteString(" committed")
			} else {
				b.WriteString(" prepared")
			}
			b.WriteByte('\n')
		}
	}
	classes := make([]*classQueue, 0, len(c.classes))
	for _, cq := range c.classes {
		classes = append(classes, cq)
	}
	slices.SortFunc(classes, func(a, b *classQueue) int { return strings.Compare(a.key, b.key) })
	for _, cq := range classes {
		fmt.Fprintf(&b, "class %q: %s", cq.key, e.taskNames(cq.tasks))
		if cq.reason != PendingNone {
			fmt.Fprintf(&b, " (%s)", cq.reason)
		}
		b.WriteByte('\n')
	}
	for _, w := range c.pool {
		fmt.Fprintf(&b, "worker %s:", e.label(w.id))
		switch {
		case w.leased():
			l := w.lease
			fmt.Fprintf(&b, " leased to %v (lease %d, class %q)", l.holder, l.id, l.key)
			if l.recalling {
				b.WriteString(" recalling")
			}
			if l.blocked {
				b.WriteString(" blocked")
			}
		case len(w.tasks) == 0 && w.idleSince.IsZero():
			b.WriteString(" idle (never ran a task)")
		case len(w.tasks) == 0:
			fmt.Fprintf(&b, " idle since %s", w.idleSince.Sub(e.epoch))
		default:
			fmt.Fprintf(&b, " %s lease %q", e.taskNames(w.tasks), w.lease.key)
		}
		b.WriteByte('\n')
	}
	for _, w := range c.waiting {
		fmt.Fprintf(&b, "waiting for a node: %s\n", e.label(w.t.id))
	}
	actorIDs := make([]ids.ActorID, 0, len(c.actors))
	for id := range c.actors {
		actorIDs = append(actorIDs, id)
	}
	slices.SortFunc(actorIDs, func(a, b ids.ActorID) int { return strings.Compare(e.label(a), e.label(b)) })
	for _, id := range actorIDs {
		a := c.actors[id]
		fmt.Fprintf(&b, "actor %s on %s: created=%v restarts=%d\n", e.label(id), e.label(a.worker), a.created, a.restarts)
	}
	s := c.stats
	fmt.Fprintf(&b, "stats: submitted=%d dispatched=%d finished=%d recalls=%d recalled=%d killed=%d reaped=%d failed-early=%d forwarded=%d spilled-back=%d actor-restarts=%d\n",
		s.Submitted, s.Dispatched, s.Finished, s.Recalls, s.Recalled, s.WorkersKilled, s.WorkersReaped, s.WorkersFailedEarly, s.Forwarded, s.SpilledBack, s.ActorRestarts)
	if s.LeaseRequests > 0 {
		fmt.Fprintf(&b, "leases: requested=%d granted=%d returned=%d recalls=%d\n", s.LeaseRequests, s.LeasesGranted, s.LeasesReturned, s.LeaseRecalls)
	}
	return b.String()
}

func (e *coreEnv) taskNames(ts []*task) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		if t.holder != nil {
			names[i] = fmt.Sprintf("lease-request(%v %d)", t.holder, t.request)
			continue
		}
		names[i] = e.label(t.id)
		if t.blocked {
			names[i] += "(blocked)"
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// checkInvariants checks the Core's accounting after every command: the
// queue count, the running tasks against the workers' pipelines, leases,
// the resources held, root slots and argument bytes.
func (e *coreEnv) checkInvariants(t *testing.T) {
	t.Helper()
	c := e.core
	queued := 0
	for _, cq := range c.classes {
		queued += len(cq.tasks)
	}
	if queued != c.queued {
		t.Fatalf("queued %d, the classes hold %d", c.queued, queued)
	}
	used := Resources{}
	running, roots, leases, recalls := 0, 0, 0, 0
	readers := map[ids.ObjectID]int{}
	idle := map[ids.WorkerID]bool{}
	for _, id := range c.idle {
		idle[id] = true
	}
	if len(c.pool) != len(c.workers) {
		t.Fatalf("%d workers in the pool order, %d known", len(c.pool), len(c.workers))
	}
	for _, w := range c.pool {
		if c.workers[w.id] != w {
			t.Fatalf("worker %s in the pool order is not known", e.label(w.id))
		}
		if w.leased() {
			if len(w.tasks) > 0 || idle[w.id] {
				t.Fatalf("worker %s leased to %v: %d tasks of the Core's, idle %v", e.label(w.id), w.lease.holder, len(w.tasks), idle[w.id])
			}
			leases++
			if w.lease.recalling {
				recalls++
			}
		} else if (len(w.tasks) == 0) != idle[w.id] || (w.lease == nil) != (len(w.tasks) == 0) {
			t.Fatalf("worker %s: %d tasks, idle %v, leased %v", e.label(w.id), len(w.tasks), idle[w.id], w.lease != nil)
		}
		if w.lease != nil {
			used.Add(w.lease.demand)
			if w.lease.root {
				roots++
			}
			if w.lease.blocked {
				used[CPU] -= w.lease.demand[CPU]
				if w.lease.root {
					roots--
				}
			}
		}
		for _, tk := range w.tasks {
			running++
			if c.running[tk.id] != tk || tk.assigned == nil || tk.assigned.worker != w.id {
				t.Fatalf("task %s on %s is not recorded running there", e.label(tk.id), e.label(w.id))
			}
			if tk.blocked {
				used.Sub(cpuShare(tk.demand))
				if tk.root {
					roots--
				}
			}
			for _, a := range tk.args {
				readers[a.ID]++
			}
		}
	}
	if recalls != c.leaseRecalls {
		t.Fatalf("%d lease recalls recorded on their way, %d leases recalling (of %d)", c.leaseRecalls, recalls, leases)
	}
	if running != len(c.running) || len(idle) != len(c.idle) {
		t.Fatalf("%d running, the workers hold %d; %d idle entries for %d idle workers", len(c.running), running, len(c.idle), len(idle))
	}
	for _, a := range c.actors {
		used.Add(a.demand)
	}
	for _, b := range c.bundles {
		if !b.committed {
			used.Add(b.resources)
		}
	}
	for k, total := range c.total {
		if got := c.avail[k] + used[k]; math.Abs(got-total) > 1e-9 {
			t.Fatalf("%s: available %g + held %g != total %g", k, c.avail[k], used[k], total)
		}
	}
	if roots != c.runningRoots {
		t.Fatalf("running roots %d, the leases hold %d", c.runningRoots, roots)
	}
	var held uint64
	for id, h := range c.held {
		held += h.size
		if readers[id] != h.readers {
			t.Fatalf("object %x: %d readers recorded, %d running tasks read it", id[:4], h.readers, readers[id])
		}
	}
	if held != c.argsHeld || len(readers) != len(c.held) {
		t.Fatalf("args held %d, the held objects sum to %d (%d objects read, %d held)", c.argsHeld, held, len(readers), len(c.held))
	}
	// Every task the node holds is queued, waiting for a node or running;
	// nothing else stays in holding (a leak would grow it forever).
	holds := map[ids.TaskID]bool{}
	for _, cq := range c.classes {
		for _, tk := range cq.tasks {
			if tk.holder == nil {
				holds[tk.id] = true
			}
		}
	}
	for _, w := range c.waiting {
		holds[w.t.id] = true
	}
	for id := range c.running {
		holds[id] = true
	}
	for id := range c.holding {
		if !holds[id] {
			t.Fatalf("task %s is recorded held, but is neither queued, waiting nor running", e.label(id))
		}
	}
	if len(holds) != len(c.holding) {
		t.Fatalf("the node holds %d tasks, %d recorded held: %v %v", len(holds), len(c.holding), holds, c.holding)
	}
}

// Queued implements TaskTracer: the script prints each new pending
// reason of a class (on its first task's span).
func (e *coreEnv) Queued(_ *atollpb.TaskSpec, id ids.TaskID, _ bool) trace.Span {
	return &scriptSpan{env: e, task: e.label(id)}
}

// scriptSpan records a queue span's pending events.
type scriptSpan struct {
	noop.Span
	env  *coreEnv
	task string
}

func (s *scriptSpan) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	for _, kv := range cfg.Attributes() {
		if kv.Key == attribute.Key("atoll.pending_reason") {
			s.env.pending = append(s.env.pending, fmt.Sprintf("%s %s: %s", name, s.task, kv.Value.AsString()))
		}
	}
}
