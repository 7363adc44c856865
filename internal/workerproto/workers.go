package workerproto

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Workers is the node's end of the protocol as the raylet uses it
// (raylet.Workers): the actors of its pool workers and actor hosts, and
// the registry of the hosts (Hosts) through which callers in the raylet's
// process call actors directly.
type Workers struct {
	hosts *Hosts
	live  *live
}

var _ raylet.Workers = Workers{}

// New returns the workers a raylet runs: processes, or in-process worker
// runtimes when its ProcessConfig.InProcess is set.
func New() Workers { return Workers{hosts: NewHosts(), live: newLive()} }

// Reap ends the workers still running once the raylet and its children
// have stopped, and returns how many there were. A worker's actor stops
// its worker when it stops, so this finds none unless an actor ended some
// other way; the node logs any it finds. It waits up to timeout in all.
func (w Workers) Reap(timeout time.Duration) int { return w.live.reap(timeout) }

// TakeEvents implements raylet.Workers: the events of the calls the
// hosts answered, taken from each host.
func (w Workers) TakeEvents() []raylet.TaskEvent {
	if w.hosts == nil {
		return nil
	}
	w.hosts.mu.RLock()
	defer w.hosts.mu.RUnlock()
	var events []raylet.TaskEvent
	for _, s := range w.hosts.m {
		taken := s.takeEvents()
		events = append(events, taken...)
		s.recycleEvents(taken)
	}
	return events
}

// Running is the number of workers started and not yet ended.
func (w Workers) Running() int { return w.live.count() }

// Hosts is the registry of the actor hosts these workers run.
func (w Workers) Hosts() *Hosts { return w.hosts }

// TaskWorker implements raylet.Workers. A pool worker is not restarted
// in place (its process's end stops it), but should its actor restart
// after a panic, the worker it started is killed first, and an actor
// restarted after it stopped starts none.
func (ws Workers) TaskWorker(w raylet.WorkerSpec) actor.Producer {
	stopped := new(atomic.Bool)
	return func() actor.Actor {
		return &taskWorker{id: w.Worker.ID, node: w.Worker.NodeID, cfg: w.Config, raylet: w.Raylet, slot: w.Slot, live: ws.live, stopped: stopped,
			proxy: proxy{id: w.Worker.ID, node: w.Worker.NodeID, cfg: w.Config, raylet: w.Raylet}}
	}
}

// ActorHost implements raylet.Workers. The host's core (the order of its
// callers' calls, the calls not run yet) and its incarnation count
// outlive the actor's restarts: the producer runs again on each restart,
// the state is made once here.
func (w Workers) ActorHost(h raylet.HostSpec) actor.Producer {
	state := &hostState{core: NewHostCore(HostConfig{Actor: h.Spec.GetActorCreation(), PipelineDepth: h.PipelineDepth})}
	return func() actor.Actor {
		return &actorHost{id: h.Actor, spec: h.Spec, worker: h.Worker, cfg: h.Config, raylet: h.Raylet, deliver: h.Deliver,
			proxy: proxy{id: h.Worker.ID, actor: h.Actor, node: h.Worker.NodeID, cfg: h.Config, raylet: h.Raylet}, state: state, hosts: w.hosts, live: w.live}
	}
}

// taskWorker is a pool worker. It runs the tasks its raylet pushes
// through its raylet.Slot; a worker that dies is not restarted in place:
// the raylet replaces it. The actor manages the worker's life (start,
// hello, exit) and forwards to it what the node tells it; tasks and their
// results do not pass through it: the raylet writes a task to the
// worker's connection through the slot, and the connection reader hands
// the result to its owner.
type taskWorker struct {
	id     ids.WorkerID
	node   ids.NodeID
	cfg    *raylet.ProcessConfig
	raylet *actor.PID
	proxy  proxy
	slot   *raylet.Slot
	live   *live
	p      *incarnation
	// stopped outlives the actor's restarts: once the actor stopped, a
	// restart that follows starts no worker (see actorHost.start).
	stopped *atomic.Bool
}

func (w *taskWorker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if w.stopped.Load() {
			return // restarted after it stopped (see actorHost.start)
		}
		system, rayletPID, sl := ctx.ActorSystem(), w.raylet, w.slot
		onResult := func(res *atollpb.TaskResult) {
			if res.GeneratorItem != nil {
				sl.DeliverItem(res) // an item a generator task yielded: it runs on
				return
			}
			if t := sl.Finish(res); t != nil {
				t.Report(system, rayletPID, res)
			}
		}
		p, err := launch(system, ctx.Self(), 1, w.cfg, &w.proxy, w.live, w.id, w.node, onResult, nil, sl.Current)
		if err != nil {
			ctx.Send(w.raylet, &raylet.WorkerExited{ID: w.id, Reason: err.Error()})
			ctx.Stop(ctx.Self())
			return
		}
		w.p = p
		p.awaitHello(system, ctx.Self(), 1, w.cfg.StartTimeout)
	case *helloResult:
		if m.err != nil {
			w.p.kill()
			return // processExited reports it
		}
		w.slot.Registered(w.p.conn, w.p.kill)
	case *processExited:
		ctx.Send(w.raylet, &raylet.WorkerExited{ID: w.id, Reason: exitReason(m)})
		ctx.Stop(ctx.Self())
	case *actor.Stopping:
		w.stopped.Store(true)
		if w.p != nil {
			w.p.stop()
			w.p.conn.Close()
		}
	case *actor.Restarting:
		if w.p != nil {
			w.p.kill()
			w.p.conn.Close()
		}
	default:
		if w.p != nil {
			forwardDown(w.p.conn, m)
		}
	}
}
