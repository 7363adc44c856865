package interaction

import (
	"fmt"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The pool worker party: a worker process holding the attempts its
// raylet pushed, in order. The first begins at once (it fetches its
// object arguments: pins them in its node's store, pulling those held
// elsewhere), the others wait (pipelining). A recall gives back an
// attempt that has not begun; `finish` ends the running one (its result
// goes to the raylet, its pins and the task's borrowed references are
// released, and the result reports what the process still borrows from
// the task's owner). The process has an owner.Table of its own (the
// borrower's side of borrowing).

type worker struct {
	env   *Env
	name  string
	id    ids.WorkerID
	node  *node
	proc  *process
	alive bool
	runs  []*run
	// seq numbers the borrow reports of the process.
	seq uint64
}

// run is an attempt pushed to a worker.
type run struct {
	a *raylet.Assignment
	// began: it is the worker's current attempt (fetching its arguments
	// or running); started: running.
	began, started bool
	waiting        map[ids.ObjectID]bool
	pinned         []ids.ObjectID
	lent           []ids.ObjectID
}

func (w *worker) party() party { return party{kind: kWorker, node: w.node, name: w.name} }

func (e *Env) newWorker(n *node, id ids.WorkerID) *worker {
	name := e.name(id.Bytes())
	w := &worker{env: e, name: name, id: id, node: n, alive: true, proc: e.newProcess(name, "worker", n, id)}
	n.workers[name] = w
	return w
}

func (w *worker) find(a *raylet.Assignment) int {
	for i, r := range w.runs {
		if r.a.ID() == a.ID() {
			return i
		}
	}
	return -1
}

// toWorker applies a message to a pool worker.
func (e *Env) toWorker(m *message) {
	w := m.to.node.workers[m.to.name]
	switch b := m.body.(type) {
	case []*raylet.Assignment:
		for _, a := range b {
			w.runs = append(w.runs, &run{a: a, waiting: map[ids.ObjectID]bool{}})
		}
		e.advance(w)
	case *raylet.Assignment:
		i := w.find(b)
		switch m.kind {
		case "recall":
			ok := i >= 0 && !w.runs[i].began
			desc := e.attempt(b.Spec()) + " started"
			if ok {
				w.runs = append(w.runs[:i], w.runs[i+1:]...)
				desc = e.attempt(b.Spec()) + " given back"
			}
			e.send(w.party(), w.node.rayletParty(), "recalled", desc, &recalledBody{worker: w.id, attemptID: b.ID(), ok: ok}, key(b.Spec()))
		case "cancel":
			if i < 0 {
				return
			}
			cancelled := &errs.CancelledError{TaskName: b.Spec().Name, TaskID: e.name(b.Spec().TaskId)}
			e.endRun(w, i, &atollpb.TaskResult{TaskId: b.Spec().TaskId, Attempt: b.Spec().Attempt, WorkerId: w.id.Bytes(), Error: errs.ToProto(cancelled)})
		}
	default:
		panic(fmt.Sprintf("interaction: worker message %T", m.body))
	}
}

// advance begins the worker's first attempt if it has not: it pins the
// arguments found in its node's store and pulls the others.
func (e *Env) advance(w *worker) {
	if !w.alive || len(w.runs) == 0 || w.runs[0].began {
		return
	}
	r := w.runs[0]
	r.began = true
	for _, arg := range r.a.Spec().Args {
		ref := arg.GetRef()
		if ref == nil || len(ref.NodeId) == 0 {
			continue
		}
		id := ids.MustObjectID(ref.ObjectId)
		if e.pin(w, r, id) {
			continue
		}
		r.waiting[id] = true
		e.startPull(w.node, objRef{id: id, size: ref.Size, codec: ref.Codec, owner: ids.MustFromBytes(ref.OwnerId),
			ownerNode: nodeFromHex(ref.OwnerAddress), primary: ids.MustFromBytes(ref.NodeId)}, w)
	}
	if len(r.waiting) == 0 {
		e.start(w, r)
	} else {
		e.printf("%s: %s waits for %s", w.name, e.attempt(r.a.Spec()), e.onameList(keys(r.waiting)))
	}
}

// pin pins id for r in the worker's node's store, if it is there.
func (e *Env) pin(w *worker, r *run, id ids.ObjectID) bool {
	res := w.node.store.Get([]ids.ObjectID{id}, w.id, e.now)
	if len(res.Missing) > 0 {
		return false
	}
	r.pinned = append(r.pinned, id)
	return true
}

// start runs r: the objects lent with it are registered in the
// process's table.
func (e *Env) start(w *worker, r *run) {
	r.started = true
	spec := r.a.Spec()
	e.ledger.executed(e, key(spec), w.name)
	r.lent, _ = w.proc.table.Lend(spec.Borrowed, ids.MustFromBytes(spec.OwnerId), nodeFromHex(spec.OwnerAddress))
	s := fmt.Sprintf("%s: runs %s", w.name, e.attempt(spec))
	if len(r.pinned) > 0 {
		s += " (pinned " + e.onameList(r.pinned) + ")"
	}
	if len(r.lent) > 0 {
		s += " (borrows " + e.onameList(r.lent) + ")"
	}
	e.printf("%s", s)
}

// argReady: an object the worker's current attempt waits for was pulled.
func (e *Env) argReady(w *worker, id ids.ObjectID) {
	if !w.alive || len(w.runs) == 0 || !w.runs[0].waiting[id] {
		return
	}
	r := w.runs[0]
	delete(r.waiting, id)
	if !e.pin(w, r, id) {
		e.argFailed(w, id, "pulled, then gone")
		return
	}
	if len(r.waiting) == 0 {
		e.start(w, r)
	}
}

// argFailed: an argument could not be fetched: the attempt fails with
// ObjectLost (the executor's fetch_args error).
func (e *Env) argFailed(w *worker, id ids.ObjectID, why string) {
	if !w.alive || len(w.runs) == 0 || !w.runs[0].waiting[id] {
		return
	}
	spec := w.runs[0].a.Spec()
	lost := &errs.ObjectLostError{ObjectID: id.String(), Message: why}
	e.endRun(w, 0, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, WorkerId: w.id.Bytes(), Error: errs.ToProto(lost)})
}

// cmdFinish: finish t1 [error] [stored[=SIZE]] [keep=o1,...]: the worker
// or actor host running the current attempt of t1 ends it.
func (e *Env) cmdFinish(c Cmd) error {
	name := c.pos(0)
	task := ids.TaskID(e.id(name))
	for _, n := range e.nodes {
		if !n.up() {
			continue
		}
		for _, w := range sortedWorkers(n) {
			if w.alive && len(w.runs) > 0 && ids.MustFromBytes(w.runs[0].a.Spec().TaskId) == task {
				if !w.runs[0].started {
					return fmt.Errorf("finish: %s has not started on %s (it waits for its arguments)", name, w.name)
				}
				spec := w.runs[0].a.Spec()
				res, err := e.outcome(c, w.node, w.proc, w.id, &w.seq, spec, w.runs[0].lent)
				if err != nil {
					return err
				}
				e.printf("%s: %s ends", w.name, e.attempt(spec))
				e.nested(func() { e.endRun(w, 0, res) })
				return nil
			}
		}
	}
	for _, h := range e.sortedHosts() {
		if !h.gone && h.running != nil && ids.MustFromBytes(h.running.spec.TaskId) == task {
			return e.finishCall(h, c)
		}
	}
	return fmt.Errorf("finish: nothing runs %s", name)
}

// outcome builds the result of an attempt: an application error, or its
// returns (inline, or stored in the node's store); then the process keeps
// what keep names, drops the task's borrowed references and reports what
// it still holds of the owner's.
func (e *Env) outcome(c Cmd, n *node, p *process, worker ids.WorkerID, seq *uint64, spec *atollpb.TaskSpec, lent []ids.ObjectID) (*atollpb.TaskResult, error) {
	res := &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, WorkerId: worker.Bytes()}
	if c.has("error") {
		res.Error = &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: "boom", TaskName: spec.Name}
	} else {
		task := ids.MustFromBytes(spec.TaskId)
		for i := 0; i < int(spec.NumReturns); i++ {
			rid := ids.ReturnObjectID(task, i)
			e.onames[rid] = fmt.Sprintf("%s.%d", spec.Name, i)
			v := inlineValue("ok")
			if c.has("stored") {
				size, err := parseSize(c.val("stored", "1MiB"))
				if err != nil {
					return nil, err
				}
				req := objectstore.CreateRequest{ID: rid, Size: size, Codec: atollpb.Codec_CODEC_BYTES, Client: worker, Owner: ids.MustFromBytes(spec.OwnerId)}
				if _, _, err := n.store.Create(req, e.now); err != nil {
					return nil, fmt.Errorf("finish: store %s: %v", e.oname(rid), err)
				}
				if err := n.store.Seal(rid, worker, e.now); err != nil {
					return nil, err
				}
				v = storedValue(n, size)
			}
			res.Returns = append(res.Returns, &atollpb.ReturnObject{ObjectId: rid.Bytes(), Value: v})
		}
	}
	for _, k := range c.list("keep") {
		if !p.table.AddRef(e.object(k)) {
			return nil, fmt.Errorf("finish: %s does not hold %s", p.name, k)
		}
	}
	p.table.DropRef(lent...)
	lender := ids.MustFromBytes(spec.OwnerId)
	*seq++
	res.BorrowsReported, res.BorrowsSeq = true, *seq
	for _, id := range p.table.HeldFor(lender) {
		res.Borrows = append(res.Borrows, id.Bytes())
	}
	return res, nil
}

// endRun ends the worker's attempt i with res: its pins go, the result
// goes to the raylet, and the next attempt begins.
func (e *Env) endRun(w *worker, i int, res *atollpb.TaskResult) {
	r := w.runs[i]
	if len(r.pinned) > 0 {
		if err := w.node.store.Release(r.pinned, w.id, e.now); err != nil {
			e.violate("%s: release of its pins: %v", w.name, err)
		}
	}
	w.runs = append(w.runs[:i], w.runs[i+1:]...)
	e.send(w.party(), w.node.rayletParty(), "finished", e.result(res), &finishedBody{worker: w.id, attemptID: r.a.ID(), res: res}, resultKey(res))
	e.advance(w)
}

// crashWorker: the worker's process dies; its raylet sees it exit.
func (e *Env) crashWorker(w *worker, reason string) {
	w.alive = false
	w.proc.alive = false
	var held []string
	for _, r := range w.runs {
		s := e.attempt(r.a.Spec())
		if r.started {
			s += " running"
		}
		held = append(held, s)
	}
	e.printf("%s crashed, holding [%s]", w.name, strings.Join(held, ", "))
	e.nested(func() {
		e.send(w.party(), w.node.rayletParty(), "exited", reason, &exitedBody{worker: w.id, reason: reason})
	})
}

func sortedWorkers(n *node) []*worker {
	out := make([]*worker, 0, len(n.workers))
	for _, w := range n.workers {
		out = append(out, w)
	}
	sortBy(out, func(w *worker) string { return w.name })
	return out
}

func keys(m map[ids.ObjectID]bool) []ids.ObjectID {
	out := make([]ids.ObjectID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return out
}
