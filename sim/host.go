package sim

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// host is an actor host: the shell of a workerproto.HostCore (the same
// core as a real host's, which orders each caller's calls and settles
// them when the worker dies) over the actor's process, and the raylet's
// supervisor (restarts within max_restarts, counted over the actor's
// life). The constructor and each call run on threads of the process,
// one call at a time in the order the core sends them (actors with
// concurrency groups run their calls one at a time here too).
type host struct {
	n       *node
	actor   ids.ActorID
	worker  ids.WorkerID
	spec    *atollpb.TaskSpec
	address string
	core    *workerproto.HostCore
	p       *proc
	gen     uint64
	ready   bool
	inst    any
	max     int
	used    int
	gone    bool
	// queue holds the calls sent to the worker, run in order.
	queue   []*workerproto.Call
	running bool
}

func (h *host) name() string { return h.address }

// spawnHost starts an actor's host and its first incarnation.
func (n *node) spawnHost(x raylet.SpawnHost) *host {
	h := &host{n: n, actor: x.Actor, worker: x.Worker, spec: x.Spec, address: "actor-" + x.Actor.Short(),
		max: int(x.Spec.GetActorCreation().GetMaxRestarts())}
	h.core = workerproto.NewHostCore(workerproto.HostConfig{Actor: x.Spec.GetActorCreation(), PipelineDepth: n.w.cfg.PipelineDepth})
	n.hosts[x.Actor] = h
	n.w.log.add("%s spawn host of actor %s", n.name, x.Actor.Short())
	h.start()
	return h
}

// start launches a new incarnation: a process and its constructor.
func (h *host) start() {
	n, w := h.n, h.n.w
	h.gen++
	gen := h.gen
	h.ready, h.inst, h.queue, h.running = false, nil, nil, false
	p := w.newProc(n, fmt.Sprintf("%s.%s.%d", n.name, h.address, gen), "actor", h.worker)
	p.wk.SimHostsActor(h.actor)
	h.p = p
	spec := h.spec
	w.spawn(p, p.name+" constructs", func(ctx context.Context) {
		inst, err := p.wk.NewActor(ctx, spec)
		if !p.alive || gen != h.gen {
			return
		}
		id := h.actor
		n.w.send(&msg{from: n, to: n, fromName: p.name, toName: n.name, path: pathLocal, kind: "ActorStarted", actor: "raylet", desc: errText(err), deliver: func() {
			n.raylet.ActorStarted(n.now(), id, err)
			n.rayletEffects()
		}})
		if err != nil {
			return
		}
		h.inst, h.ready = inst, true
		h.apply(h.core.Ready(n.now(), gen))
	})
}

// arrive takes a call from its caller.
func (h *host) arrive(spec *atollpb.TaskSpec, caller *actor.PID) {
	// Lossy as a real host's mailbox's calls (the direct path of a
	// caller in the host's own process is not simulated apart).
	h.apply(h.core.Arrive(h.n.now(), &workerproto.Call{Spec: spec, Caller: caller, Lossy: true}))
}

// apply performs the core's effects.
func (h *host) apply(effects []workerproto.HostEffect) {
	n, w := h.n, h.n.w
	for _, e := range effects {
		switch e := e.(type) {
		case workerproto.Send:
			h.queue = append(h.queue, e.Call)
		case workerproto.Reply:
			n.deliverTo(e.Call.Caller.(*actor.PID), e.Result, h.address)
			for _, a := range e.Call.Also() {
				n.deliverTo(a.Caller.(*actor.PID), workerproto.AnswerFor(a, e.Result), h.address)
			}
		case workerproto.Fail:
			died := &errs.ActorDiedError{ActorID: h.actor.String(), Name: h.spec.GetActorCreation().GetName(), Message: e.Reason}
			n.deliverTo(e.Call.Caller.(*actor.PID), &atollpb.TaskResult{TaskId: e.Call.Spec.TaskId, Attempt: e.Call.Spec.Attempt,
				Error: errs.ToProto(died), ActorCrashed: true}, h.address)
		case workerproto.AlreadyRan:
			w.log.add("%s answered %s without running it: it ran already", h.address, attempt(e.Call.Spec))
			n.deliverTo(e.Call.Caller.(*actor.PID), workerproto.AlreadyRanResult(e.Call.Spec), h.address)
		case workerproto.Drop:
			if e.Why != workerproto.DropDuplicate {
				w.log.add("%s dropped %s: another attempt of the call runs or waits", h.address, attempt(e.Call.Spec))
				break
			}
			w.log.add("%s dropped %s: seq %d delivered twice", h.address, attempt(e.Call.Spec), e.Call.Spec.SequenceNumber)
		case workerproto.SkipGap:
			w.log.add("%s skips a gap in a caller's calls", h.address)
		case workerproto.ArmTimer:
			// The core's gap timer, which outlives incarnations (as the
			// real host's does: its tick goes to the host, not to a
			// worker); dropped with an incarnation, the core would
			// think it armed, and calls held behind a gap would wait for
			// ever.
			w.after(e.After, func() {
				if !h.gone && n.up {
					h.apply(h.core.Tick(n.now()))
				}
			})
		case workerproto.PumpDue:
		}
	}
	h.pump()
}

// pump runs the next call sent to the worker, if none runs.
func (h *host) pump() {
	if h.running || !h.ready || len(h.queue) == 0 || !h.p.alive {
		return
	}
	n, w := h.n, h.n.w
	c := h.queue[0]
	h.queue = h.queue[1:]
	h.running = true
	p, gen, inst := h.p, h.gen, h.inst
	w.check.executed(c.Spec, h.address)
	w.check.actorCall(h.actor, c.Spec)
	w.spawn(p, p.name+" runs "+attempt(c.Spec), func(ctx context.Context) {
		before, after := w.taskTime()
		w.sleep(before)
		res, panicked := p.wk.RunActorTask(ctx, inst, c.Spec)
		w.sleep(after)
		if !p.alive || gen != h.gen {
			return
		}
		h.running = false
		if panicked {
			msg := res.GetError().GetMessage()
			h.apply(append(h.core.Finish(gen, res), h.core.Crash("an earlier call's method panicked: "+msg, false)...))
			h.crashProcess(fmt.Sprintf("method %s panicked: %s", c.Spec.Name, msg))
			return
		}
		var again bool
		for _, e := range h.core.Finish(gen, res) {
			switch e := e.(type) {
			case workerproto.Reply:
				n.deliverTo(e.Call.Caller.(*actor.PID), res, h.address)
				for _, a := range e.Call.Also() {
					n.deliverTo(a.Caller.(*actor.PID), workerproto.AnswerFor(a, res), h.address)
				}
			case workerproto.PumpDue:
				again = true
			}
		}
		if again {
			h.apply(h.core.Pump(n.now()))
		} else {
			h.pump()
		}
	})
}

// crashProcess: the actor's process dies (a fault, a crash asked for, a
// panicking method). The core settles the calls in flight; the
// supervisor restarts the actor within its budget, or stops it for good.
func (h *host) crashProcess(reason string) {
	if h.gone {
		return
	}
	n, w := h.n, h.n.w
	if h.p.alive {
		h.p.die(reason)
		h.apply(h.core.Crash("the actor's worker died while running this call: "+reason, true))
	}
	h.running, h.ready, h.queue = false, false, nil
	n.store.clientDisconnected(h.worker)
	id := h.actor
	if h.max < 0 || h.used < h.max {
		h.used++
		used := h.used
		w.log.add("%s restarts (%d of %d): %s", h.address, used, h.max, reason)
		n.rayletSend(n.name, "ActorFailed", "raylet", "restarted", func() {
			n.raylet.ActorFailed(n.now(), id, reason, true, used)
			n.rayletEffects()
		})
		h.start()
		return
	}
	h.gone = true
	used := h.used
	w.log.add("%s dies: restarts spent: %s", h.address, reason)
	n.rayletSend(n.name, "ActorFailed", "raylet", "spent", func() {
		n.raylet.ActorFailed(n.now(), id, reason, false, used)
		n.raylet.ActorTerminated(n.now(), id, reason)
		n.rayletEffects()
	})
}

// stop stops the actor for good (Kill, a failed constructor, its owner's
// node gone).
func (h *host) stop() {
	if h.gone {
		return
	}
	n := h.n
	h.gone = true
	h.p.die("stopped")
	n.store.clientDisconnected(h.worker)
	id := h.actor
	n.rayletSend(n.name, "ActorTerminated", "raylet", h.address, func() {
		n.raylet.ActorTerminated(n.now(), id, nil)
		n.rayletEffects()
	})
}
