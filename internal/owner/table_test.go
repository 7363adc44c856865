package owner

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/cockroachdb/datadriven"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

// TestScenarios runs the scripted scenarios of testdata/*.txt
// (go test ./owner -run Scenarios -rewrite regenerates the expectations).
// Each command applies one event to a Table and prints the effects it
// produced, one per line; `state` prints the Table. Names: p* objects
// put by this process, b* borrowed objects, t* tasks (t1.0 is t1's
// first return), a* actors, n* nodes, w* waiters. See run for the
// commands and their arguments.
//
// Every scenario runs twice: with specs kept whole, and packed
// (Config.Pack: a leasable task's spec is packed from its dispatch on,
// and its retries, cancellation, results and lineage go through the
// packed form). The effects print the specs sent either way, so one
// expectation covers both.
func TestScenarios(t *testing.T) {
	for _, pack := range []bool{false, true} {
		t.Run(fmt.Sprintf("pack=%v", pack), func(t *testing.T) {
			packed := 0
			datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
				env := newEnv()
				env.table.cfg.Pack = pack
				datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
					out := env.run(t, d)
					env.checkLenders(t)
					packed += env.packed
					env.packed = 0
					return out
				})
			})
			if pack && packed == 0 {
				t.Fatal("no scenario sent a packed spec")
			}
			t.Logf("%d packed specs sent", packed)
		})
	}
}

type env struct {
	table   *Table
	node    ids.NodeID
	names   map[string][16]byte
	objects map[string]ids.ObjectID
	label   map[ids.ObjectID]string
	tasks   map[ids.TaskID]string
	actors  map[ids.ActorID]string
	waiters map[chan<- struct{}]string
	byName  map[string]*Waiter
	seq     byte
	packed  int // packed specs sent
}

func newEnv() *env {
	e := &env{names: map[string][16]byte{}, objects: map[string]ids.ObjectID{}, label: map[ids.ObjectID]string{},
		tasks: map[ids.TaskID]string{}, actors: map[ids.ActorID]string{}, waiters: map[chan<- struct{}]string{}, byName: map[string]*Waiter{}}
	e.node = e.id16("n0")
	e.table = New(Config{Worker: e.id16("w0"), Node: e.node})
	return e
}

// id16 gives every name a fixed id, so output is deterministic.
func (e *env) id16(name string) [16]byte {
	if id, ok := e.names[name]; ok {
		return id
	}
	e.seq++
	var id [16]byte
	copy(id[:], name)
	id[15] = e.seq
	e.names[name] = id
	return id
}

func (e *env) object(t *testing.T, name string) ids.ObjectID {
	if id, ok := e.objects[name]; ok {
		return id
	}
	if task, idx, ok := strings.Cut(name, "."); ok {
		var i int
		if _, err := fmt.Sscanf(idx, "%d", &i); err != nil {
			t.Fatalf("bad return name %q", name)
		}
		id := ids.ReturnObjectID(e.id16(task), i)
		e.objects[name], e.label[id] = id, name
		return id
	}
	id := ids.PutObjectID(e.id16("puts"), uint32(len(e.objects)+1))
	e.objects[name], e.label[id] = id, name
	return id
}

func (e *env) storedValue(node string) *atollpb.Value {
	n := e.node
	if node != "" {
		n = e.id16(node)
	}
	return &atollpb.Value{Codec: atollpb.Codec_CODEC_BYTES, Kind: &atollpb.Value_Stored{Stored: &atollpb.ObjectLocation{Length: 1 << 20, NodeId: n[:]}}}
}

func inlineValue(s string) *atollpb.Value {
	return &atollpb.Value{Codec: atollpb.Codec_CODEC_BYTES, Kind: &atollpb.Value_Inline{Inline: []byte(s)}}
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

func (e *env) run(t *testing.T, d *datadriven.TestData) string {
	tb := e.table
	name := ""
	if len(d.CmdArgs) > 0 && len(d.CmdArgs[0].Vals) == 0 {
		name = d.CmdArgs[0].Key
	}
	switch d.Cmd {
	case "put": // put p1 [stored] [node=n1] [value=x] [contains=p2,...]
		var node, val string
		d.MaybeScanArgs(t, "node", &node)
		d.MaybeScanArgs(t, "value", &val)
		v := inlineValue(val)
		if d.HasArg("stored") || node != "" {
			v = e.storedValue(node)
		}
		var contained []ids.ObjectID
		for _, c := range list(d, "contains") {
			id := e.object(t, c)
			if !tb.AddRef(id) { // the encoding's reference
				return fmt.Sprintf("error: %s unknown", c)
			}
			contained = append(contained, id)
		}
		tb.Put(e.object(t, name), v, nil, contained)
	case "borrow": // borrow b1 owner=n2 [stored]
		var owner string
		d.ScanArgs(t, "owner", &owner)
		v := inlineValue("borrowed")
		if d.HasArg("stored") {
			v = e.storedValue(owner)
		}
		tb.Borrow(e.object(t, name), v, e.id16(owner))
	case "lend": // lend lender=w9 owner=n2 objects=b1,b2 [stored=b1,...] [edges=b1>b2,...]
		var lender, owner string
		d.ScanArgs(t, "lender", &lender)
		d.ScanArgs(t, "owner", &owner)
		stored := map[string]bool{}
		for _, n := range list(d, "stored") {
			stored[n] = true
		}
		edges := e.edges(t, list(d, "edges"))
		var objs []*atollpb.ReturnObject
		for _, n := range list(d, "objects") {
			v := inlineValue("lent")
			if stored[n] {
				v = e.storedValue(owner)
			}
			v.ContainedRefs = edges[n]
			objs = append(objs, &atollpb.ReturnObject{ObjectId: e.object(t, n).Bytes(), Value: v})
		}
		lent, err := tb.Lend(objs, ids.WorkerID(e.id16(lender)), e.id16(owner))
		out := "lent " + e.nameList(lent)
		if err != nil {
			out += "\nerror: " + err.Error()
		}
		return out + "\n" + e.effects()
	case "held": // held lender=w9
		var lender string
		d.ScanArgs(t, "lender", &lender)
		return "held " + e.nameList(tb.HeldFor(ids.WorkerID(e.id16(lender))))
	case "report-to": // report-to lender=w9 node=n2: this borrower's in-result report to w9
		var lender, node string
		d.ScanArgs(t, "lender", &lender)
		d.ScanArgs(t, "node", &node)
		return "report " + e.nameList(tb.ReportTo(ids.WorkerID(e.id16(lender)), e.id16(node)))
	case "drop-reports": // drop-reports [except=w9]: the standalone reports due
		var except string
		d.MaybeScanArgs(t, "except", &except)
		var ex ids.WorkerID
		if except != "" {
			ex = e.id16(except)
		}
		var out []string
		for _, r := range tb.TakeDropReports(ex) {
			out = append(out, fmt.Sprintf("report to %s@%s %s", e.nodeName(r.Lender[:]), e.nodeName(r.Node[:]), e.nameList(r.Held)))
		}
		if len(out) == 0 {
			return "no reports due"
		}
		return strings.Join(out, "\n")
	case "report": // report worker=w5 seq=N [actor=a1] [borrows=p1,...] [owner=w0]: a borrower's standalone report
		var worker, actor, owner string
		var seq int
		d.ScanArgs(t, "worker", &worker)
		d.ScanArgs(t, "seq", &seq)
		d.MaybeScanArgs(t, "actor", &actor)
		owner = "w0"
		d.MaybeScanArgs(t, "owner", &owner)
		w, o := e.id16(worker), e.id16(owner)
		m := &atollpb.BorrowReport{OwnerId: o[:], BorrowerWorkerId: w[:], BorrowsSeq: uint64(seq)}
		if actor != "" {
			a := e.id16(actor)
			m.BorrowerActorId = a[:]
		}
		for _, b := range list(d, "borrows") {
			m.Borrows = append(m.Borrows, e.object(t, b).Bytes())
		}
		applied, err := tb.ApplyBorrowReport(m)
		switch {
		case err != nil:
			return "error: " + err.Error()
		case !applied:
			return "kept aside: no record of the borrower"
		}
	case "export": // export to=w9 node=n9 refs=p1,...
		var to, node string
		d.ScanArgs(t, "to", &to)
		d.ScanArgs(t, "node", &node)
		var refs []ids.ObjectID
		for _, n := range list(d, "refs") {
			refs = append(refs, e.object(t, n))
		}
		out, err := tb.Export(refs, ids.WorkerID(e.id16(to)), e.id16(node))
		if err != nil {
			return "error: " + err.Error()
		}
		var names []string
		for _, r := range out {
			n := e.label[ids.MustObjectID(r.ObjectId)]
			for _, c := range r.Value.GetContainedRefs() {
				n += ">" + e.label[ids.MustObjectID(c.ObjectId)]
			}
			names = append(names, n)
		}
		return "transferred [" + strings.Join(names, " ") + "]"
	case "submit": // submit t1 [args=p1,t0.0] [values=N] [holds=p2] [owned=p3] [returns=N] [retries=N] [retry-exceptions] [call=a1] [create=a1] [fail]
		task := ids.TaskID(e.id16(name))
		e.tasks[task] = name
		returns, retries := 1, 0
		d.MaybeScanArgs(t, "returns", &returns)
		d.MaybeScanArgs(t, "retries", &retries)
		// Packed, a spec goes back to the pool the next submissions take
		// theirs from: a record that read a spec after packing it would
		// read another task's.
		spec := specpack.NewSpec()
		spec.TaskId, spec.Type, spec.Name, spec.Function = task.Bytes(), atollpb.TaskType_NORMAL_TASK, name, "f"
		spec.NumReturns, spec.MaxRetries, spec.RetryExceptions = int32(returns), int32(retries), d.HasArg("retry-exceptions")
		s := Submission{Spec: spec, Attach: name, Recycle: e.table.cfg.Pack}
		for i := 0; i < returns; i++ {
			e.object(t, fmt.Sprintf("%s.%d", name, i))
		}
		for _, a := range list(d, "args") {
			s.Args = append(s.Args, Arg{Ref: e.object(t, a)})
		}
		for _, a := range list(d, "owned") {
			s.Args = append(s.Args, Arg{Ref: e.object(t, a), Owned: true})
		}
		var values int
		d.MaybeScanArgs(t, "values", &values)
		for i := 0; i < values; i++ {
			s.Args = append(s.Args, Arg{Value: inlineValue("v")})
		}
		if h := list(d, "holds"); len(h) > 0 {
			var held []ids.ObjectID
			for _, name := range h {
				id := e.object(t, name)
				if !tb.AddRef(id) { // the encoding's reference
					return fmt.Sprintf("error: %s unknown", name)
				}
				held = append(held, id)
			}
			s.Args = append(s.Args, Arg{Value: inlineValue("holds refs"), Holds: held})
		}
		var actor string
		if d.MaybeScanArgs(t, "call", &actor); actor != "" {
			spec.Type = atollpb.TaskType_ACTOR_TASK
			s.Actor = ids.ActorID(e.id16(actor))
		}
		var created string
		if d.MaybeScanArgs(t, "create", &created); created != "" {
			spec.Type = atollpb.TaskType_ACTOR_CREATION_TASK
			id := ids.ActorID(e.id16(created))
			spec.ActorId = id.Bytes()
			e.actors[id] = created
			tb.AddActor(id, created, true)
		}
		if d.HasArg("fail") {
			s.Err = &atollpb.ErrorInfo{Code: atollpb.ErrorCode_INVALID_ARGUMENT, Message: "bad argument"}
		}
		if d.HasArg("generator") {
			spec.Generator = true
			for i := 1; i <= 8; i++ { // its first items' objects, named for the effects
				e.object(t, fmt.Sprintf("%s.%d", name, i))
			}
			var limit int
			d.MaybeScanArgs(t, "backpressure", &limit)
			spec.GeneratorBackpressure = int32(limit)
			tb.SubmitGenerator(s)
			break
		}
		tb.Submit(s)
	case "item": // item t1 index=N [attempt=N] [stored]: generator t1 yielded item N (object t1.<N+1>)
		task := ids.TaskID(e.id16(name))
		var index, attempt int
		d.ScanArgs(t, "index", &index)
		d.MaybeScanArgs(t, "attempt", &attempt)
		v := inlineValue(fmt.Sprintf("item%d", index))
		if d.HasArg("stored") {
			v = e.storedValue("")
		}
		rid := e.object(t, fmt.Sprintf("%s.%d", name, index+1))
		tb.Result(&atollpb.TaskResult{TaskId: task.Bytes(), Attempt: int32(attempt), GeneratorItem: &atollpb.GeneratorItem{Index: int64(index)},
			Returns: []*atollpb.ReturnObject{{ObjectId: rid.Bytes(), Value: v}}})
	case "take": // take t1: the caller takes the next item of generator t1
		item, ok, _, known := tb.TakeGeneratorItem(ids.TaskID(e.id16(name)))
		switch {
		case !known:
			return "unknown stream"
		case !ok:
			return "none yet\n" + e.effects()
		}
		return "took " + e.label[item] + "\n" + e.effects()
	case "drop-gen": // drop-gen t1: the caller drops generator t1's stream
		tb.DropGenerator(ids.TaskID(e.id16(name)))
	case "reset": // a fresh table
		*e = *newEnv()
		return ""
	case "lineage-budget": // lineage-budget bytes=N
		var n int
		d.ScanArgs(t, "bytes", &n)
		tb.cfg.LineageBudget = n
	case "reconstruct": // reconstruct t1.0
		if err := tb.Reconstruct(e.object(t, name), "node died"); err != nil {
			return fmt.Sprintf("error %s: %s\n%s", err.Code, err.Message, e.effects())
		}
	case "result": // result t1 [attempt=N] [error=CODE [lost=t0.0] [node=n1]] [crashed] [stored[=n2]] [returns=N] [contains=p1] [addr=host|@n1/host] [yielded=N]
		// [worker=w5] [reported [seq=N] [borrows=b1,...]] [transfer=x1,... [transfer-edges=x1>x2,...]]
		task := ids.TaskID(e.id16(name))
		var attempt, seq int
		var code, addr, worker string
		d.MaybeScanArgs(t, "attempt", &attempt)
		d.MaybeScanArgs(t, "error", &code)
		d.MaybeScanArgs(t, "addr", &addr)
		d.MaybeScanArgs(t, "worker", &worker)
		d.MaybeScanArgs(t, "seq", &seq)
		var yielded int
		d.MaybeScanArgs(t, "yielded", &yielded)
		res := &atollpb.TaskResult{TaskId: task.Bytes(), Attempt: int32(attempt), ActorCrashed: d.HasArg("crashed"), ActorAddress: e.address(addr),
			BorrowsReported: d.HasArg("reported"), BorrowsSeq: uint64(seq), GeneratorYielded: int64(yielded)}
		if worker != "" {
			w := e.id16(worker)
			res.WorkerId = w[:]
		}
		for _, b := range list(d, "borrows") {
			res.Borrows = append(res.Borrows, e.object(t, b).Bytes())
		}
		edges := e.edges(t, list(d, "transfer-edges"))
		for _, x := range list(d, "transfer") {
			v := e.storedValue("")
			v.ContainedRefs = edges[x]
			res.Transferred = append(res.Transferred, &atollpb.ReturnObject{ObjectId: e.object(t, x).Bytes(), Value: v})
		}
		if code != "" {
			c, ok := atollpb.ErrorCode_value[code]
			if !ok {
				t.Fatalf("unknown error code %q", code)
			}
			res.Error = &atollpb.ErrorInfo{Code: atollpb.ErrorCode(c), Message: strings.ToLower(code)}
			var lost, node string
			if d.MaybeScanArgs(t, "lost", &lost); lost != "" {
				res.Error.ObjectId = e.object(t, lost).Bytes()
			}
			if d.MaybeScanArgs(t, "node", &node); node != "" {
				n := e.id16(node)
				res.Error.NodeId = n[:]
			}
		} else {
			v := inlineValue("result")
			for _, a := range d.CmdArgs {
				if a.Key == "stored" { // stored, or stored=n2: on that node
					v = e.storedValue(strings.Join(a.Vals, ""))
				}
			}
			for _, c := range list(d, "contains") {
				v.ContainedRefs = append(v.ContainedRefs, &atollpb.ObjectRef{ObjectId: e.object(t, c).Bytes()})
			}
			returns := 1
			d.MaybeScanArgs(t, "returns", &returns)
			for i := range returns {
				res.Returns = append(res.Returns, &atollpb.ReturnObject{ObjectId: ids.ReturnObjectID(task, i).Bytes(), Value: v})
			}
		}
		tb.Result(res)
	case "worker-died": // worker-died w5: a pool worker process died
		tb.WorkerDied(ids.WorkerID(e.id16(name)))
	case "cancel": // cancel t [non-recursive]
		tb.Cancel(ids.TaskID(e.id16(name)), d.HasArg("non-recursive"))
	case "addref":
		if !tb.AddRef(e.object(t, name)) {
			return "unknown object"
		}
	case "drop": // drop p1 [p2 ...]
		var idl []ids.ObjectID
		for _, a := range d.CmdArgs {
			idl = append(idl, e.object(t, a.Key))
		}
		tb.DropRef(idl...)
	case "actor": // actor a1 [owned]
		id := ids.ActorID(e.id16(name))
		e.actors[id] = name
		tb.AddActor(id, name, d.HasArg("owned"))
	case "actor-event", "actor-located":
		// actor-event a1 alive addr=x | dead | restarting [addr=x] (no address: its node died) [restarts=N]: the GCS's event;
		// actor-located: the same, the GCS's answer to a LocateActor.
		id := ids.ActorID(e.id16(name))
		info := &atollpb.ActorInfo{ActorId: id.Bytes(), Name: name}
		switch {
		case d.HasArg("alive"):
			info.State = atollpb.ActorState_ACTOR_ALIVE
			d.ScanArgs(t, "addr", &info.Address)
		case d.HasArg("dead"):
			info.State = atollpb.ActorState_ACTOR_DEAD
			info.DeathCause = &atollpb.ErrorInfo{Code: atollpb.ErrorCode_ACTOR_DIED, Message: "killed"}
		case d.HasArg("restarting"):
			info.State = atollpb.ActorState_ACTOR_RESTARTING
			d.MaybeScanArgs(t, "addr", &info.Address)
		}
		info.Address = e.address(info.Address)
		var n int
		d.MaybeScanArgs(t, "restarts", &n)
		info.NumRestarts = int32(n)
		if d.Cmd == "actor-located" {
			tb.ActorLocated(info)
			break
		}
		tb.ActorEvent(info)
	case "locate-failed": // locate-failed a1: the shell's lookup of a1 gave up
		tb.LocateFailed(ids.ActorID(e.id16(name)))
	case "ask-due": // ask-due a1: an AskActor's wait is over
		tb.AskDue(ids.ActorID(e.id16(name)))
	case "drop-handle":
		tb.DropActorHandle(ids.ActorID(e.id16(name)))
	case "kill-actor":
		tb.ActorKilled(ids.ActorID(e.id16(name)), "killed by its caller")
	case "node-died":
		tb.NodeDied(e.id16(name))
	case "watch": // watch p1 w1
		w := e.byName[d.CmdArgs[1].Key]
		if w == nil {
			c := make(chan struct{}, 1)
			w = &Waiter{C: c}
			e.waiters[c], e.byName[d.CmdArgs[1].Key] = d.CmdArgs[1].Key, w
		}
		if !tb.Watch(e.object(t, name), w) {
			return "not pending"
		}
	case "unwatch": // unwatch w1
		tb.Unwatch(e.byName[name])
	case "get":
		v, _, _, ok := tb.Lookup(e.object(t, name))
		if !ok {
			return "unknown"
		}
		return e.value(v)
	case "close":
		tb.Close(&atollpb.ErrorInfo{Code: atollpb.ErrorCode_UNAVAILABLE, Message: "shut down"})
	case "state":
		return e.state()
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return e.effects()
}

// address reads an actor's address in a script: @n1/a1 is a1 on node
// n1, its id in hex as a cluster address has it; any other stays as is.
func (e *env) address(s string) string {
	if node, rest, ok := strings.Cut(s, "/"); ok && strings.HasPrefix(node, "@") {
		id := e.id16(node[1:])
		return hex.EncodeToString(id[:]) + "/" + rest
	}
	return s
}

// checkLenders: the count of entries per lender matches the entries.
func (e *env) checkLenders(t *testing.T) {
	want := map[ids.WorkerID]int{}
	for _, o := range e.table.objects {
		if !o.x().lender.IsZero() {
			want[o.x().lender]++
		}
	}
	if len(want) != len(e.table.fromLender) {
		t.Fatalf("fromLender %v, entries say %v", e.table.fromLender, want)
	}
	for l, n := range want {
		if e.table.fromLender[l] != n {
			t.Fatalf("fromLender %v, entries say %v", e.table.fromLender, want)
		}
	}
}

// edges parses "a>b" pairs into the contained refs of each a.
func (e *env) edges(t *testing.T, pairs []string) map[string][]*atollpb.ObjectRef {
	out := map[string][]*atollpb.ObjectRef{}
	for _, p := range pairs {
		from, to, ok := strings.Cut(p, ">")
		if !ok {
			t.Fatalf("bad edge %q (want a>b)", p)
		}
		out[from] = append(out[from], &atollpb.ObjectRef{ObjectId: e.object(t, to).Bytes()})
	}
	return out
}

// nameList renders object ids by their script names.
func (e *env) nameList(idl []ids.ObjectID) string {
	var n []string
	for _, id := range idl {
		n = append(n, e.label[id])
	}
	return "[" + strings.Join(n, " ") + "]"
}

func (e *env) value(v *atollpb.Value) string {
	switch {
	case v == nil:
		return "pending"
	case v.GetError() != nil:
		return "error " + v.GetError().Code.String()
	case v.GetStored() != nil:
		return "stored@" + e.nodeName(v.GetStored().GetNodeId())
	}
	return fmt.Sprintf("inline %q", v.GetInline())
}

func (e *env) nodeName(b []byte) string {
	for name, id := range e.names {
		if string(id[:]) == string(b) {
			return name
		}
	}
	return "?"
}

func (e *env) spec(s *atollpb.TaskSpec) string {
	var args []string
	for _, a := range s.Args {
		if r := a.GetRef(); r != nil {
			arg := e.label[ids.MustObjectID(r.ObjectId)]
			if len(r.NodeId) > 0 {
				arg += "@" + e.nodeName(r.NodeId)
			}
			args = append(args, arg)
			continue
		}
		args = append(args, e.value(a.GetValue()))
	}
	out := fmt.Sprintf("%s attempt=%d args=[%s]", s.Name, s.Attempt, strings.Join(args, ", "))
	if len(s.Borrowed) > 0 {
		var b []string
		for _, r := range s.Borrowed {
			b = append(b, e.label[ids.MustObjectID(r.ObjectId)])
		}
		out += " lent=[" + strings.Join(b, " ") + "]"
	}
	return out
}

func (e *env) effects() string {
	var lines []string
	for _, eff := range e.table.TakeEffects() {
		switch f := eff.(type) {
		case SendTask:
			lines = append(lines, "send "+e.spec(f.Spec))
		case SendPacked:
			if !e.table.cfg.Pack {
				lines = append(lines, "error: a packed spec sent unasked")
			}
			e.packed++
			lines = append(lines, "send "+e.spec(f.Spec.Unpack()))
		case *CallActor:
			lines = append(lines, fmt.Sprintf("call %s: %s", f.Address, e.spec(f.Spec)))
		case CancelTask:
			if f.NonRecursive {
				lines = append(lines, "cancel "+e.tasks[f.Task]+" non-recursive")
			} else {
				lines = append(lines, "cancel "+e.tasks[f.Task])
			}
		case Free:
			var n []string
			for _, id := range f.Objects {
				n = append(n, e.label[id])
			}
			sort.Strings(n)
			lines = append(lines, "free "+strings.Join(n, " "))
		case FreeStrays:
			var n []string
			for _, id := range f.Objects {
				n = append(n, e.label[id])
			}
			sort.Strings(n)
			lines = append(lines, "free-strays@"+e.nodeName(f.Node.Bytes())+" "+strings.Join(n, " "))
		case Revive:
			var n []string
			for _, id := range f.Objects {
				n = append(n, e.label[id])
			}
			sort.Strings(n)
			lines = append(lines, "revive "+strings.Join(n, " "))
		case Notify:
			lines = append(lines, "notify "+e.waiters[f.C])
		case ActorRestartFailed:
			lines = append(lines, fmt.Sprintf("actor-restart-failed %s: %s", e.actors[f.Actor], f.Err.Code))
		case AskActor:
			lines = append(lines, fmt.Sprintf("ask %s after=%v", e.actors[f.Actor], f.After))
		case LocateActor:
			if f.After > 0 {
				lines = append(lines, fmt.Sprintf("locate %s after=%v", e.actors[f.Actor], f.After))
			} else {
				lines = append(lines, "locate "+e.actors[f.Actor])
			}
		case Dispatched:
			lines = append(lines, fmt.Sprintf("dispatched %s", f.Attach))
		case Retried:
			lines = append(lines, fmt.Sprintf("retried %s attempt=%d cause=%s", f.Attach, f.Attempt, f.Cause.Code))
		case GeneratorAck:
			count := func(n int64) string {
				if n == consumedAll {
					return "all"
				}
				return fmt.Sprint(n)
			}
			lines = append(lines, fmt.Sprintf("ack %s attempt=%d consumed=%s received=%s", e.tasks[f.Task], f.Attempt, count(f.Consumed), count(f.Received)))
		case Finished:
			if f.Err == nil {
				lines = append(lines, fmt.Sprintf("finished %s", f.Attach))
			} else {
				lines = append(lines, fmt.Sprintf("finished %s error=%s", f.Attach, f.Err.Code))
			}
		default:
			lines = append(lines, fmt.Sprintf("%T", eff))
		}
	}
	if len(lines) == 0 {
		return "(no effects)"
	}
	return strings.Join(lines, "\n")
}

func (e *env) state() string {
	tb := e.table
	var lines []string
	var objs []string
	for id, o := range tb.objects {
		s := fmt.Sprintf("object %s refs=%d %s", e.label[id], o.refs, e.value(o.value))
		if o.borrowed {
			s += " borrowed"
			if lender := o.x().lender; !lender.IsZero() {
				s += " lender=" + e.nodeName(lender[:])
			}
		}
		if len(o.x().contained) > 0 {
			s += " holds=" + e.nameList(o.x().contained)
		}
		objs = append(objs, s)
	}
	for id, o := range tb.released {
		objs = append(objs, fmt.Sprintf("released %s lineage-refs=%d", e.label[id], o.x().lineageRefs))
	}
	sort.Strings(objs)
	lines = append(lines, objs...)
	var lin []string
	for _, l := range tb.lineageOrder {
		if l.forgotten {
			continue
		}
		id := l.id()
		attempt := l.spec.GetAttempt()
		if l.packed != nil {
			attempt = l.packed.Attempt()
		}
		lin = append(lin, fmt.Sprintf("lineage %s attempt=%d recoveries=%d", e.tasks[id], attempt, l.recoveries()))
	}
	sort.Strings(lin)
	lines = append(lines, lin...)
	for _, tk := range tb.sortedTasks() {
		s := fmt.Sprintf("task %s attempt=%d", tk.attach, tk.attempt())
		switch {
		case tk.cancelled:
			s += " cancelled"
		case tk.dispatched:
			s += " dispatched"
		default:
			s += fmt.Sprintf(" waiting=%d", tk.unresolved())
		}
		lines = append(lines, s)
	}
	var gens []string
	for id, g := range tb.gens {
		s := fmt.Sprintf("generator %s reported=%d taken=%d", e.tasks[id], len(g.items), g.taken)
		if len(g.early) > 0 {
			s += fmt.Sprintf(" early=%v", slices.Sorted(maps.Keys(g.early)))
		}
		gens = append(gens, s)
	}
	sort.Strings(gens)
	lines = append(lines, gens...)
	var acts []string
	for id, a := range tb.actors {
		s := fmt.Sprintf("actor %s address=%q queued=%d inflight=%d", e.actors[id], a.address, len(a.queue), len(a.inflight))
		if a.dead != nil {
			s += " dead"
		}
		acts = append(acts, s)
	}
	sort.Strings(acts)
	lines = append(lines, acts...)
	var brw []string
	for k, r := range tb.borrowers {
		who := "worker " + e.nodeName(k.worker[:])
		if !k.actor.IsZero() {
			who = "actor " + e.actors[k.actor]
		}
		var held []string
		for id := range r.objects {
			held = append(held, e.label[id])
		}
		sort.Strings(held)
		brw = append(brw, fmt.Sprintf("borrower %s holds [%s]", who, strings.Join(held, " ")))
	}
	for k, r := range tb.early {
		who := "worker " + e.nodeName(k.worker[:])
		if !k.actor.IsZero() {
			who = "actor " + e.actors[k.actor]
		}
		var held []string
		for _, b := range r.borrows {
			held = append(held, e.label[ids.MustObjectID(b)])
		}
		sort.Strings(held)
		brw = append(brw, fmt.Sprintf("early report from %s seq=%d [%s]", who, r.seq, strings.Join(held, " ")))
	}
	sort.Strings(brw)
	lines = append(lines, brw...)
	if len(lines) == 0 {
		return "(empty)"
	}
	return strings.Join(lines, "\n")
}

// A plain task's record stays small: a million queued at once hold
// this many bytes each (its returns' ids are computed, not kept), the
// parts few tasks need (object arguments, lineage's counts) in taskArgs.
// The record holds its packed spec (64 bytes of it), and most tasks' come
// with their first return's in one allocation of a size class.
func TestTaskRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(task{}); n > 144 {
		t.Errorf("task is %d bytes, want at most 144 (a size class): move what few tasks need to taskArgs", n)
	}
	if n := unsafe.Sizeof(taskWithReturn{}); n > 208 {
		t.Errorf("taskWithReturn is %d bytes, want at most 208 (a size class)", n)
	}
	tk := &task{}
	if tk.deps() != nil || tk.holds() != nil || tk.unresolved() != 0 || tk.refArgs() != 0 || tk.recoveries() != 0 || tk.rebuilding() || tk.args != nil {
		t.Errorf("a plain task's less used part: %+v", tk.args)
	}
}

// TakeGroup lists a group's pending tasks in submission order, none
// finished, and forgets the group; the index it builds stays bounded by
// the pending tasks while tasks come and go.
func TestTakeGroup(t *testing.T) {
	tb := New(Config{Group: func(attach any) any { return attach }})
	submit := func(attach string) ids.TaskID {
		id := ids.NewTaskID()
		tb.Submit(Submission{Spec: &atollpb.TaskSpec{TaskId: id.Bytes(), Type: atollpb.TaskType_NORMAL_TASK, Name: attach, NumReturns: 1},
			Attach: attach})
		return id
	}
	fail := func(id ids.TaskID) {
		tb.Result(&atollpb.TaskResult{TaskId: id.Bytes(), Error: &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: "x"}})
	}
	var tasks []ids.TaskID
	for _, attach := range []string{"a", "b", "a", "a"} {
		tasks = append(tasks, submit(attach))
	}
	fail(tasks[2])
	if got, want := tb.TakeGroup("a"), []ids.TaskID{tasks[0], tasks[3]}; !slices.Equal(got, want) {
		t.Fatalf("group a: %v, want %v", got, want)
	}
	// Indexed now: a task submitted later joins its group at once.
	later := submit("a")
	fail(tasks[3])
	if got, want := tb.TakeGroup("a"), []ids.TaskID{later}; !slices.Equal(got, want) {
		t.Fatalf("group a again: %v, want %v", got, want)
	}
	if got := tb.TakeGroup("a"); len(got) != 0 {
		t.Fatalf("group a taken twice: %v", got)
	}
	// Tasks that come and go in a group nobody takes: the index stays
	// within twice the pending tasks (counted before the last one
	// finished) and its slack.
	for range 10 * groupSlack {
		fail(submit("c"))
		if tb.groupEntries > 2*(len(tb.tasks)+1)+groupSlack {
			t.Fatalf("%d entries indexed for %d pending tasks", tb.groupEntries, len(tb.tasks))
		}
	}
	keep := submit("c")
	if got, want := tb.TakeGroup("b"), []ids.TaskID{tasks[1]}; !slices.Equal(got, want) {
		t.Fatalf("group b: %v, want %v", got, want)
	}
	if got, want := tb.TakeGroup("c"), []ids.TaskID{keep}; !slices.Equal(got, want) {
		t.Fatalf("group c: %v, want %v", got, want)
	}
	if got, want := tb.InSubmissionOrder([]ids.TaskID{later, tasks[0], tasks[1], tasks[0]}), []ids.TaskID{tasks[0], tasks[1], later}; !slices.Equal(got, want) {
		t.Fatalf("in submission order: %v, want %v", got, want)
	}
}

// A task's return looked up by the record its ref came with reads what
// a lookup by id reads, pending and then resolved; once every reference
// is dropped the record is no longer the object's, and a lookup with it
// finds what the table holds under the id now (nothing, or an object
// borrowed under the same id since), never the freed record. ValueOf
// reads the same values, and makes no done channel.
func TestLookupRecord(t *testing.T) {
	tb := New(Config{})
	id := ids.NewTaskID()
	spec := &atollpb.TaskSpec{TaskId: id.Bytes(), Type: atollpb.TaskType_NORMAL_TASK, Name: "f", NumReturns: 1, MaxRetries: 3}
	returns, recs := tb.SubmitRecords(nil, []Record{}, Submission{Spec: spec})
	if len(returns) != 1 || len(recs) != 1 || recs[0].o == nil {
		t.Fatalf("SubmitRecords: %v, %v", returns, recs)
	}
	rid, rec := returns[0], recs[0]
	if v, ok := tb.ValueOf(rid, rec); !ok || v != nil || rec.o.done != nil {
		t.Fatalf("pending return: ValueOf %v, ok %v, done channel %v; want nil, true, none made", v, ok, rec.o.done)
	}
	v, _, done, ok := tb.LookupRecord(rid, rec)
	if !ok || v != nil || done == nil {
		t.Fatalf("pending return: value %v, done %v, ok %v", v, done, ok)
	}
	value := inlineValue("result")
	tb.Result(&atollpb.TaskResult{TaskId: id.Bytes(), Returns: []*atollpb.ReturnObject{{ObjectId: rid.Bytes(), Value: value}}})
	select {
	case <-done:
	default:
		t.Fatal("the done channel of a resolved return is open")
	}
	if v, _, _, ok := tb.LookupRecord(rid, rec); !ok || v != value {
		t.Fatalf("resolved return: value %v, ok %v; want %v", v, ok, value)
	}
	if v, ok := tb.ValueOf(rid, rec); !ok || v != value {
		t.Fatalf("resolved return: ValueOf %v, ok %v; want %v", v, ok, value)
	}
	tb.DropRef(rid)
	if v, _, _, ok := tb.LookupRecord(rid, rec); ok {
		t.Fatalf("freed return found by its old record: %v", v)
	}
	if v, ok := tb.ValueOf(rid, rec); ok {
		t.Fatalf("freed return's value found by its old record: %v", v)
	}
	borrowed := inlineValue("borrowed")
	tb.Borrow(rid, borrowed, ids.NodeID{})
	if v, _, _, ok := tb.LookupRecord(rid, rec); !ok || v != borrowed {
		t.Fatalf("an object under the freed return's id since: value %v, ok %v; want %v", v, ok, borrowed)
	}
	if v, ok := tb.ValueOf(rid, rec); !ok || v != borrowed {
		t.Fatalf("an object under the freed return's id since: ValueOf %v, ok %v; want %v", v, ok, borrowed)
	}
}

// A task the table owns costs it one allocation from submission to its
// return's drop when it keeps a lineage: its record (which becomes its
// lineage when it finishes) with its return's, and its packed spec
// (Config.Pack) kept in it. Without lineage the two records part when
// the task ends: the return's is an allocation, the task's a share of a
// run of them (package slab).
// The specs, results and effects' list are the caller's.
func TestTaskAllocations(t *testing.T) {
	for _, c := range []struct {
		retries int32 // 0: no lineage kept
		pack    bool
		want    float64
	}{{0, false, 1}, {3, false, 1}, {3, true, 1}, {0, true, 1}} {
		retries := c.retries
		tb := New(Config{Pack: c.pack})
		const n = 1000
		specs := make([]*atollpb.TaskSpec, 0, n+100)
		results := make([]*atollpb.TaskResult, 0, n+100)
		value := inlineValue("result")
		worker := ids.NewWorkerID()
		for range n + 100 {
			id := ids.NewTaskID()
			specs = append(specs, &atollpb.TaskSpec{TaskId: id.Bytes(), Type: atollpb.TaskType_NORMAL_TASK, Name: "f", NumReturns: 1, MaxRetries: retries})
			results = append(results, &atollpb.TaskResult{TaskId: id.Bytes(), WorkerId: worker.Bytes(),
				Returns: []*atollpb.ReturnObject{{ObjectId: ids.ReturnObjectID(id, 0).Bytes(), Value: value}}})
		}
		var effects []Effect
		var rids [1]ids.ObjectID
		i := 0
		task := func() {
			tb.SubmitTo(rids[:0], Submission{Spec: specs[i]})
			tb.Result(results[i])
			tb.DropRef(rids[0])
			effects = tb.AppendEffects(effects[:0])
			i++
		}
		for range 100 { // the tables and the effects' list grow first
			task()
		}
		if got := testing.AllocsPerRun(n-1, task); got != c.want {
			t.Errorf("MaxRetries(%d), pack %v: %v allocations a task, want %v", retries, c.pack, got, c.want)
		}
		if st := tb.Stats(); st.Tasks != 0 || st.Objects != 0 || st.Lineage != 0 {
			t.Errorf("MaxRetries(%d): %+v left after every task finished and its return was dropped", retries, st)
		}
	}
}

// SubmitRecordsIn puts a task's records in the caller's space: a plain
// task's with its first return's in a TaskSpace; an actor call's or a
// task's without retries first return's alone in an ObjectSpace (its
// task's record goes when it ends). Either way the records read as
// ones of the table's own.
func TestSubmitRecordsInSpace(t *testing.T) {
	tb := New(Config{Pack: true})
	actor := ids.NewActorID()
	tb.AddActor(actor, "a", true)
	for _, c := range []struct {
		name    string
		retries int32
		actor   bool
		inTask  bool // the records go in a TaskSpace
	}{{"plain task", 3, false, true}, {"no retries", 0, false, false}, {"actor call", 3, true, false}} {
		id := ids.NewTaskID()
		typ := atollpb.TaskType_NORMAL_TASK
		s := Submission{Spec: &atollpb.TaskSpec{TaskId: id.Bytes(), Type: typ, Name: "f", NumReturns: 2, MaxRetries: c.retries}}
		if c.actor {
			s.Spec.Type, s.Spec.ActorId, s.Actor = atollpb.TaskType_ACTOR_TASK, actor.Bytes(), actor
		}
		if InSpace(s) != c.inTask {
			t.Fatalf("%s: InSpace %v, want %v", c.name, InSpace(s), c.inTask)
		}
		var taskSpace TaskSpace
		var objectSpace ObjectSpace
		rids, recs := tb.SubmitRecordsIn(&taskSpace, &objectSpace, nil, make([]Record, 0, 2), s)
		if len(rids) != 2 || len(recs) != 2 {
			t.Fatalf("%s: %d returns, %d records", c.name, len(rids), len(recs))
		}
		want := &objectSpace.o
		if c.inTask {
			want = &taskSpace.b.ret
			if tb.tasks[id] != &taskSpace.b.task {
				t.Errorf("%s: the task's record is not the space's", c.name)
			}
		}
		if recs[0].o != want || recs[1].o == want {
			t.Errorf("%s: the first return's record is not the space's, or the second's is", c.name)
		}
		if c.actor {
			continue // no address: the call waits
		}
		tb.Result(&atollpb.TaskResult{TaskId: id.Bytes(), WorkerId: ids.NewWorkerID().Bytes(), Returns: []*atollpb.ReturnObject{
			{ObjectId: rids[0].Bytes(), Value: inlineValue("a")}, {ObjectId: rids[1].Bytes(), Value: inlineValue("b")}}})
		if v, _, _, ok := tb.LookupRecord(rids[0], recs[0]); !ok || string(v.GetInline()) != "a" {
			t.Errorf("%s: the first return reads %v, %v", c.name, v, ok)
		}
		tb.DropRef(rids...)
		if st := tb.Stats(); st.Tasks != 0 || st.Objects != 0 {
			t.Errorf("%s: %+v left after the task finished and its returns were dropped", c.name, st)
		}
	}
}
