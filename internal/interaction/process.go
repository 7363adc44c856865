package interaction

import (
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// The owner party: one owner.Table per process (a driver, a pool
// worker's process, an actor's process). A driver's commands (put,
// release, submit, call, create-actor, cancel) are calls on its Table;
// its effects become messages (tasks to its raylet, calls to actor hosts,
// cancels, the free broadcast) or printed events (retried, finished).

// process is one owner process.
type process struct {
	env   *Env
	name  string
	kind  string // "driver", "worker" or "actor"
	node  *node
	id    ids.WorkerID
	pid   *actor.PID
	table *owner.Table
	alive bool
}

func (p *process) party() party { return party{kind: kOwner, node: p.node, name: p.name} }

func (e *Env) newProcess(name, kind string, n *node, id ids.WorkerID) *process {
	p := &process{env: e, name: name, kind: kind, node: n, id: id, pid: &actor.PID{Address: n.name, Id: name},
		table: owner.New(owner.Config{Worker: id, Node: n.id}), alive: true}
	e.procs[name] = p
	return p
}

// cmdAddDriver: add-driver d1 node=n1.
func (e *Env) cmdAddDriver(c Cmd) error {
	name := c.pos(0)
	n, err := e.nodeArg(c.val("node", "n1"))
	if err != nil {
		return err
	}
	if e.procs[name] != nil {
		return fmt.Errorf("add-driver: %s exists", name)
	}
	e.newProcess(name, "driver", n, ids.WorkerID(e.id(name)))
	e.printf("%s: driver on %s", name, n.name)
	return nil
}

// cmdOwner runs a driver's command:
//
//	put d1 o1 [size=1MiB]               a Put: created and sealed in its node's store
//	release d1 o1                       its handle to o1 is dropped
//	submit d1 t1 [cpu=1] [retries=N] [returns=N] [args=o1,t0.0] [holds=o1] [affinity=n3]
//	create-actor d1 a1 [max-restarts=N] [cpu=0]
//	call d1 a1 c1 [retries=N] [holds=o1] (retries: max_task_retries)
//	cancel d1 t1
func (e *Env) cmdOwner(c Cmd) error {
	p := e.procs[c.pos(0)]
	if p == nil || !p.alive {
		return fmt.Errorf("%s: no live process %q", c.Name, c.pos(0))
	}
	name := c.pos(1)
	if name == "" {
		return fmt.Errorf("%s: name what", c.Name)
	}
	e.printf("%s: %s %s", p.name, c.Name, strings.Join(c.posArgs()[1:], " "))
	switch c.Name {
	case "put":
		size, err := parseSize(c.val("size", "1MiB"))
		if err != nil {
			return err
		}
		id := e.object(name)
		req := objectstore.CreateRequest{ID: id, Size: size, Codec: atollpb.Codec_CODEC_BYTES, Client: p.id, Owner: p.id}
		if _, _, err := p.node.store.Create(req, e.now); err != nil {
			return fmt.Errorf("put: %v", err)
		}
		if err := p.node.store.Seal(id, p.id, e.now); err != nil {
			return fmt.Errorf("put: %v", err)
		}
		p.table.Put(id, storedValue(p.node, size), nil, nil)
		e.nested(func() { e.printf("%s: created and sealed %s (%d bytes)", p.node.store_(), name, size) })
	case "release":
		p.table.DropRef(e.object(name))
	case "submit", "call", "create-actor":
		if err := e.submit(p, c, name); err != nil {
			return err
		}
	case "cancel":
		p.table.Cancel(ids.TaskID(e.id(name)), false)
	}
	e.nested(func() { e.ownerEffects(p) })
	return nil
}

func storedValue(n *node, size uint64) *atollpb.Value {
	return &atollpb.Value{Codec: atollpb.Codec_CODEC_BYTES, Kind: &atollpb.Value_Stored{Stored: &atollpb.ObjectLocation{NodeId: n.id.Bytes(), Length: size}}}
}

func inlineValue(s string) *atollpb.Value {
	return &atollpb.Value{Codec: atollpb.Codec_CODEC_BYTES, Kind: &atollpb.Value_Inline{Inline: []byte(s)}}
}

// submit builds the spec of a task, call or actor creation and submits it.
func (e *Env) submit(p *process, c Cmd, name string) error {
	cpu, err := c.float("cpu", map[string]float64{"submit": 1}[c.Name])
	if err != nil {
		return err
	}
	retries, err := c.int("retries", 0)
	if err != nil {
		return err
	}
	returns, err := c.int("returns", 1)
	if err != nil {
		return err
	}
	actorName := ""
	if c.Name == "call" {
		actorName, name = name, c.pos(2)
	}
	if name == "" || e.tasks[name] != nil {
		return fmt.Errorf("%s: bad or duplicate name %q", c.Name, name)
	}
	task := ids.TaskID(e.id(name))
	info := &taskInfo{name: name, id: task, owner: p}
	spec := &atollpb.TaskSpec{TaskId: task.Bytes(), Name: name, Function: name, NumReturns: int32(returns), MaxRetries: int32(retries),
		OwnerId: p.id.Bytes(), OwnerAddress: p.node.id.String()}
	if cpu > 0 {
		spec.Resources = map[string]float64{"CPU": cpu}
	}
	if aff := c.val("affinity", ""); aff != "" {
		n, err := e.nodeArg(aff)
		if err != nil {
			return err
		}
		spec.Scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, NodeId: n.id.Bytes()}
	}
	s := owner.Submission{Spec: spec, Attach: name}
	for _, a := range c.list("args") {
		s.Args = append(s.Args, owner.Arg{Ref: e.object(a)})
	}
	if h := c.list("holds"); len(h) > 0 {
		v := inlineValue("holds refs")
		var held []ids.ObjectID
		for _, o := range h {
			id := e.object(o)
			if !p.table.AddRef(id) { // the encoding's reference
				return fmt.Errorf("%s: %s unknown to %s", c.Name, o, p.name)
			}
			held = append(held, id)
			v.ContainedRefs = append(v.ContainedRefs, &atollpb.ObjectRef{ObjectId: id.Bytes()})
		}
		s.Args = append(s.Args, owner.Arg{Value: v, Holds: held})
	}
	switch c.Name {
	case "create-actor":
		restarts, err := c.int("max-restarts", 0)
		if err != nil {
			return err
		}
		actorID := ids.ActorID(e.id(name))
		spec.Type, spec.ActorId = atollpb.TaskType_ACTOR_CREATION_TASK, actorID.Bytes()
		spec.ActorCreation = &atollpb.ActorCreationSpec{ActorType: "A", Name: name, MaxRestarts: int32(restarts)}
		p.table.AddActor(actorID, name, true)
		info.actor = name
	case "call":
		info.actor = actorName
		spec.Function = actorName + "." + name
		spec.Type, spec.ActorId = atollpb.TaskType_ACTOR_TASK, e.id(actorName).Bytes()
		s.Actor = ids.ActorID(e.id(actorName))
	}
	e.tasks[info.name] = info
	p.table.Submit(s)
	return nil
}

// toOwner applies a message to an owner process.
func (e *Env) toOwner(m *message) {
	p := e.procs[m.to.name]
	switch b := m.body.(type) {
	case *atollpb.TaskResult:
		p.table.Result(b)
	case *atollpb.ActorInfo:
		p.table.ActorEvent(b)
	default:
		panic(fmt.Sprintf("interaction: owner message %T", m.body))
	}
	e.ownerEffects(p)
}

// ownerEffects carries out a Table's effects.
func (e *Env) ownerEffects(p *process) {
	for _, eff := range p.table.TakeEffects() {
		switch x := eff.(type) {
		case owner.SendTask:
			e.ledger.sent[key(x.Spec)] = true
			e.send(p.party(), p.node.rayletParty(), "submit", e.attempt(x.Spec), &submitBody{m: &atollpb.SubmitTask{Spec: x.Spec}, owner: p.pid}, key(x.Spec))
		case *owner.CallActor:
			e.ledger.sent[key(x.Spec)] = true
			to := e.hostByAddress(x.Address)
			e.send(p.party(), to, "call", fmt.Sprintf("%s seq=%d", e.attempt(x.Spec), x.Spec.SequenceNumber), &callBody{spec: x.Spec, caller: p.pid}, key(x.Spec))
		case owner.CancelTask:
			e.send(p.party(), p.node.rayletParty(), "cancel", e.name(x.Task.Bytes()), &atollpb.CancelTask{TaskId: x.Task.Bytes(), NonRecursive: x.NonRecursive})
		case owner.Free:
			e.broadcastFree(p, x.Objects, false)
		case owner.Revive:
			e.broadcastFree(p, x.Objects, true)
		case owner.FreeStrays:
			e.printf("%s: frees the stray copies on %s of %s", p.name, e.name(x.Node.Bytes()), e.onameList(x.Objects))
			e.stepGW(p.node, cluster.Free{Objects: ids.ObjectIDsBytes(x.Objects), StrayOn: x.Node})
		case owner.Retried:
			e.printf("%s: %s retried: attempt %d after %s", p.name, x.Attach, x.Attempt, e.errorInfo(x.Cause))
		case owner.ActorRestartFailed:
			e.printf("%s: actor %s's restart failed: %s", p.name, x.Name, e.errorInfo(x.Err))
		case owner.Finished:
			if x.Err == nil {
				e.printf("%s: %s finished ok", p.name, x.Attach)
			} else {
				e.printf("%s: %s failed: %s", p.name, x.Attach, e.errorInfo(x.Err))
			}
			e.ledger.finished(e, p, fmt.Sprint(x.Attach))
		}
	}
}

// broadcastFree hands the owner's free to its node's gateway, which
// numbers it, applies it to its own store and publishes it to every node
// (the free subject): each store deletes its copy, each gateway its
// directory entry.
func (e *Env) broadcastFree(p *process, idl []ids.ObjectID, revived bool) {
	e.stepGW(p.node, cluster.Free{Objects: ids.ObjectIDsBytes(idl), Revived: revived})
}

func (e *Env) errorInfo(err *atollpb.ErrorInfo) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%s %q", err.Code, e.unhex(err.Message))
}
