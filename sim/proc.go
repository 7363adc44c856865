package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// proc is one owner process: the driver, a pool worker's process or an
// actor's, each with its own runtime (internal/runtime, the same as a real
// process's) whose link, store client and GCS client are the world's.
type proc struct {
	w    *World
	seq  int
	name string
	kind string // "driver", "worker", "actor"
	node *node
	id   ids.WorkerID
	pid  *actor.PID
	rt   *runtime.Runtime
	wk   *runtime.Worker
	// alive until it dies (a kill, its node's death) or stops.
	alive   bool
	threads []*thread
	// fetches are the node's threads pulling objects for it: their
	// contexts end when it dies.
	fetches []*thread
	env     *procEnv
	client  *storeClient
}

// newProc makes a process of kind on n (its runtime made by mk).
func (w *World) newProc(n *node, name, kind string, id ids.WorkerID) *proc {
	p := &proc{w: w, seq: len(w.procs) + 1, name: name, kind: kind, node: n, id: id, alive: true,
		pid: &actor.PID{Address: n.name, Id: name}}
	p.env = &procEnv{p: p}
	p.client = &storeClient{p: p}
	sp := runtime.SimProcess{
		Settings: runtime.Settings{Logger: w.cfg.Logger, TracerProvider: w.trace.provider(p), InlineThreshold: w.cfg.InlineThreshold,
			Namespace: "default"},
		WorkerID: id, NodeID: n.id, Env: p.env, Link: &procLink{p: p}, Store: p.client, GCS: &gcsClient{p: p},
		Observe: func(e owner.Effect) { w.check.observe(p, e) },
	}
	if kind == "driver" {
		sp.OnStop = func() error {
			if w.onDriverStop != nil {
				return w.onDriverStop()
			}
			p.rt.SimStop()
			return nil
		}
	}
	switch kind {
	case "driver":
		p.rt = runtime.NewSimDriver(sp)
	default:
		p.wk = runtime.NewSimWorker(sp, kind == "actor")
		p.rt = p.wk.Runtime
	}
	w.procs[id] = p
	w.byPID[name] = p
	return p
}

// die ends the process as a crash: its runtime stops answering, its
// threads end, the store and the cluster drop what it owned and pinned.
func (p *proc) die(why string) {
	if !p.alive {
		return
	}
	p.alive = false
	p.rt.SimKill()
	p.w.log.add("proc %s died: %s", p.name, why)
	p.w.killThreads(p)
	for _, t := range p.fetches {
		t.cancel(errThreadKilled)
	}
	p.fetches = nil
}

// procEnv is runtime.SimEnv for one process.
type procEnv struct{ p *proc }

func (e *procEnv) NewID() ids.ID16        { return e.p.w.newID() }
func (e *procEnv) Now() time.Time         { return e.p.node.now() }
func (e *procEnv) Park(ready func() bool) { e.p.w.park(ready) }
func (e *procEnv) After(d time.Duration, f func()) {
	p := e.p
	p.w.after(d, func() {
		if p.alive {
			f()
		}
	})
}

func (e *procEnv) AfterFunc(ctx context.Context, f func()) func() bool {
	return e.p.w.watchContext(e.p, ctx, f)
}

func (e *procEnv) Go(name string, f func()) {
	e.p.w.spawn(e.p, e.p.name+" "+name, func(context.Context) { f() })
}

func (e *procEnv) Post(f func()) {
	p := e.p
	p.w.after(0, func() {
		if p.alive {
			f()
		}
	})
}

// Context watches: the runtime's context.AfterFunc, run by the loop.
// After each event the loop checks the watched contexts, in the order
// they were watched, and runs the function of each that is done.

type watch struct {
	p       *proc
	ctx     context.Context
	f       func()
	stopped bool
}

func (w *World) watchContext(p *proc, ctx context.Context, f func()) func() bool {
	wt := &watch{p: p, ctx: ctx, f: f}
	w.watches = append(w.watches, wt)
	return func() bool {
		if wt.stopped {
			return false
		}
		wt.stopped = true
		return true
	}
}

// fireWatches runs the functions of the watched contexts that ended.
func (w *World) fireWatches() {
	if len(w.watches) == 0 {
		return
	}
	keep := w.watches[:0]
	var due []*watch
	for _, wt := range w.watches {
		switch {
		case wt.stopped || !wt.p.alive:
		case wt.ctx.Err() != nil:
			wt.stopped = true
			due = append(due, wt)
		default:
			keep = append(keep, wt)
		}
	}
	clear(w.watches[len(keep):])
	w.watches = keep
	for _, wt := range due {
		wt := wt
		w.spawn(wt.p, wt.p.name+" context watch", func(context.Context) { wt.f() })
	}
}

// procLink is runtime.SimLink: what a process sends its node.
type procLink struct{ p *proc }

// toRaylet sends a message from the process to its node's raylet.
func (l *procLink) toRaylet(kind, desc string, f func(n *node)) {
	// kind: the message's type, as the raylet's actor receives it.
	p := l.p
	if !p.alive {
		return
	}
	n := p.node
	p.w.send(&msg{from: n, to: n, fromName: p.name, toName: n.name, path: pathLocal, kind: kind, actor: "raylet", desc: desc, deliver: func() {
		if n.up {
			f(n)
			n.rayletEffects()
		}
	}})
}

func (l *procLink) SubmitTask(spec *atollpb.TaskSpec) {
	pid := l.p.pid
	l.toRaylet("SubmitTask", attempt(spec), func(n *node) {
		n.raylet.Submit(n.now(), &atollpb.SubmitTask{Spec: spec}, pid)
	})
}

func (l *procLink) CancelTask(id ids.TaskID, nonRecursive bool) {
	l.toRaylet("CancelTask", id.Short(), func(n *node) {
		n.raylet.Cancel(n.now(), &atollpb.CancelTask{TaskId: id.Bytes(), NonRecursive: nonRecursive})
	})
}

func (l *procLink) SetBlocked(id ids.TaskID, blocked bool) {
	l.toRaylet("WorkerBlocked", fmt.Sprintf("%s %v", id.Short(), blocked), func(n *node) { n.raylet.Blocked(n.now(), id, blocked) })
}

func (l *procLink) CallActor(address string, spec *atollpb.TaskSpec) {
	p := l.p
	if !p.alive {
		return
	}
	node, local := raylet.SplitActorAddress(address)
	n := p.node
	if !node.IsZero() && node != n.id {
		caller := p.pid
		p.w.send(&msg{from: n, to: n, fromName: p.name, toName: n.name + ".gw", path: pathLocal, kind: "PushTask", actor: "gateway", desc: attempt(spec), deliver: func() {
			n.stepGW(cluster.SendCall{Node: node, Address: local, Spec: spec, Caller: caller})
		}})
		return
	}
	n.pushCall(p.name, local, spec, p.pid)
}

func (l *procLink) KillActor(m *atollpb.KillActor) {
	l.toRaylet("KillActor", ids.MustFromBytes(m.ActorId).Short(), func(n *node) { n.raylet.KillActor(n.now(), m, false) })
}

func (l *procLink) KillWorker(m *atollpb.KillWorker) {
	l.toRaylet("KillWorker", "", func(n *node) { n.raylet.KillWorker(n.now(), m) })
}

// Fetch asks the node to pull objects held elsewhere. The node's fetcher
// does it on a thread of its own (as the raylet's process does for its
// workers), whose context ends when the worker dies (as the node's does
// when the worker's connection ends): it starts nothing more, since the
// owner may free what a dead worker asked for, and a pull under way ends
// as it would have (the node's transfer seals or gives back its copy
// itself, whoever still waits on it).
func (l *procLink) Fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	p := l.p
	if !p.alive {
		return errs.ErrShutDown
	}
	n := p.node
	var done bool
	var err error
	t := p.w.spawn(nil, n.name+".fetch for "+p.name, func(fctx context.Context) {
		err = n.fetch(fctx, p, refs)
		done = true
	})
	p.fetches = append(slices.DeleteFunc(p.fetches, func(f *thread) bool { return f.state == threadDone }), t)
	p.w.park(func() bool { return done || ctx.Err() != nil })
	if !done {
		return ctx.Err()
	}
	return err
}

func (l *procLink) SendBorrows(m *atollpb.BorrowReport) {
	l.toRaylet("BorrowReport", "", func(n *node) { n.routeBorrowReport(m) })
}

// GeneratorAck passes an owner's ack to its node's raylet, which writes
// it to the worker running the attempt or passes it on (rayletEffect).
func (l *procLink) GeneratorAck(m *atollpb.GeneratorAck) {
	l.toRaylet("GeneratorAck", fmt.Sprintf("%s#%d consumed=%d", ids.MustFromBytes(m.TaskId).Short(), m.Attempt, m.Consumed), func(n *node) {
		n.raylet.GeneratorAck(n.now(), m, 0)
	})
}

// ReportItem sends an item a generator attempt of this worker yielded to
// its raylet, which hands it to the attempt's owner
// (raylet.Slot.DeliverItem).
func (l *procLink) ReportItem(res *atollpb.TaskResult) error {
	p := l.p
	if !p.alive {
		return errs.Unavailablef("the worker process is stopping")
	}
	n := p.node
	s := n.workers[p.id]
	if s == nil || s.running == nil || !s.running.Is(res.TaskId, res.Attempt) {
		return errs.Invalidf("no generator attempt %s#%d runs here", ids.MustFromBytes(res.TaskId).Short(), res.Attempt)
	}
	a := s.running
	// On the link the attempt's result takes after it (the worker's
	// connection): the raylet reads the item before the attempt ends
	// there, as long as it still has the worker.
	p.w.send(&msg{from: n, to: n, fromName: p.name, toName: n.name, path: pathLocal, kind: "TaskResult", actor: "raylet",
		desc: fmt.Sprintf("item %d of %s", res.GeneratorItem.GetIndex(), result(res)), deliver: func() {
			if n.up && n.workers[p.id] == s {
				n.deliverTo(a.Owner(), res, n.name)
			}
		}})
	return nil
}

func (l *procLink) Free(idl []ids.ObjectID)   { l.p.node.broadcastFree(l.p, idl, false) }
func (l *procLink) Revive(idl []ids.ObjectID) { l.p.node.broadcastFree(l.p, idl, true) }
func (l *procLink) FreeStrays(node ids.NodeID, idl []ids.ObjectID) {
	l.p.node.freeStrays(l.p, node, idl)
}

// broadcastFree hands an owner's free (or revive) to its node's gateway,
// which numbers it, applies it here and publishes it to every node: each
// store deletes its copy, each gateway forgets its copies.
func (n *node) broadcastFree(p *proc, idl []ids.ObjectID, revived bool) {
	if !p.alive || len(idl) == 0 {
		return
	}
	if !revived {
		n.w.check.freed(p, idl)
	}
	n.stepGW(cluster.Free{Objects: ids.ObjectIDsBytes(idl), Revived: revived})
}

// freeStrays hands an owner's free of the stray copies on one node to
// its node's gateway, which tells every node (only that one deletes).
func (n *node) freeStrays(p *proc, node ids.NodeID, idl []ids.ObjectID) {
	if !p.alive || len(idl) == 0 {
		return
	}
	n.stepGW(cluster.Free{Objects: ids.ObjectIDsBytes(idl), StrayOn: node})
}

// routeBorrowReport takes a borrower's standalone report to its owner
// (raylet.routeBorrowReport): on another node through the cluster, here
// to the owner's process.
func (n *node) routeBorrowReport(m *atollpb.BorrowReport) {
	w := n.w
	owner, err := ids.FromBytes(m.GetOwnerId())
	if err != nil {
		return
	}
	if node, err := ids.FromBytes(m.GetOwnerNode()); err == nil && !node.IsZero() && node != n.id {
		to := w.byNode[node]
		if to == nil {
			return
		}
		w.send(&msg{from: n, to: to, fromName: n.name + ".gw", toName: to.name + ".gw", path: pathNATS, kind: "BorrowReport", actor: "gateway",
			deliver: func() { to.routeBorrowReport(m) }})
		return
	}
	if p := w.procs[owner]; p != nil && p.alive && p.node == n {
		w.send(&msg{from: n, to: n, fromName: n.name, toName: p.name, path: pathLocal, kind: "BorrowReport", actor: "owner", deliver: func() {
			if p.alive {
				p.rt.SimDeliver(m)
			}
		}})
	}
}

// deliverTo gives a result to the party pid names: a process of the
// node's, or its gateway (work forwarded here).
func (n *node) deliverTo(pid *actor.PID, res *atollpb.TaskResult, from string) {
	if pid == nil {
		return
	}
	w := n.w
	if pid.Id == n.gwPID.Id {
		w.send(&msg{from: n, to: n, fromName: from, toName: n.name + ".gw", path: pathLocal, kind: "TaskResult", actor: "gateway", desc: result(res),
			deliver: func() { n.stepGW(cluster.LocalResult{Result: res}) }})
		return
	}
	p := w.byPID[pid.Id]
	if p == nil {
		return
	}
	w.send(&msg{from: n, to: p.node, fromName: from, toName: p.name, path: pathLocal, kind: "TaskResult", actor: "owner", desc: result(res), deliver: func() {
		if p.alive {
			w.check.resultDelivered(p, res)
			p.rt.SimDeliver(res)
		}
	}})
}

// attempt names an attempt in the log.
func attempt(spec *atollpb.TaskSpec) string {
	return fmt.Sprintf("%s:%s#%d", spec.Name, ids.MustFromBytes(spec.TaskId).Short(), spec.Attempt)
}

// result describes a result in the log.
func result(r *atollpb.TaskResult) string {
	s := fmt.Sprintf("%s#%d", ids.MustFromBytes(r.TaskId).Short(), r.Attempt)
	if r.Error != nil {
		s += " " + r.Error.Code.String()
	} else {
		s += " ok"
	}
	if r.ActorCrashed {
		s += " crashed"
	}
	return s
}
