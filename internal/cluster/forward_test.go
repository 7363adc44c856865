package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestForwardScenarios runs the scripted scenarios of testdata/*.txt
// (go test ./internal/cluster -run ForwardScenarios -rewrite regenerates
// the expectations). A script holds several nodes' Forwarders (fwdEnv):
// commands step one node with an event and print the effects, one per
// line, prefixed with the node; messages published wait in flight until
// `deliver` (or `stabilize`) hands them to their node, whose effects are
// printed under the delivery. Names: n* nodes, t* tasks, c* actor calls
// (t1.0 is t1's attempt 0), o* owners, w* owner processes, h* actor host
// addresses, x* objects, z* nodes that are not members.
//
//	nodes n1 n2 [lease=10s] [max-per-origin=N] [max=N] [max-bytes-per-origin=N]
//	      [max-bytes=N] [max-dead=N] [max-payload=N] [head=n1]
//	forward n1 t1 to=n2 [attempt=N] [hops=N] [owner=o1 | relay] [size=N] [owner-worker=w1 [owner-node=n1]] [generator]
//	call n1 c1 to=n2 addr=h1 [attempt=N] [owner=o1]
//	cancel n1 t1 [non-recursive]
//	result n2 t1 [attempt=N] [error=CODE] [crashed] [size=N]   the raylet's (or host's) result
//	item n2 t1 index=N [attempt=N] [size=N]                  a generator item from the raylet
//	ack n1 t1 [attempt=N] [link=N] [consumed=N]              the raylet passes a generator ack on
//	no-host n2 addr=h1                                       a call found no actor (dead letter)
//	deliver [from=n1] [to=n2] [kind=result] [n=N]            messages in flight, oldest first
//	drop [from=..] [to=..] [kind=..] [n=N]                   lose messages in flight
//	dup [from=..] [to=..] [kind=..] [n=N]                    duplicate messages in flight
//	stabilize                                                deliver until nothing is in flight
//	net                                                      list the messages in flight
//	tick [by=1s] [nodes=n1,n2]                               advance the clock, then a lease tick
//	gone n1 node=n2 [died]                                   n1 hears n2 left (or died)
//	load n1 from=n2 [cpu=N] [avail=N] [draining] [leaving] [addr=A]
//	owner-exited n1 w1                                       an owner process of n1 exited
//	copies n1 x1 nodes=n2,n3 [dropped] | free n1 x1 | locate n1 x1
//	unavailable n1 [off]                                     n1's publishes fail
//	answer n1 node=n2 [error=CODE]                           the GCS answers n1's report of n2's death
//	state n1
func TestForwardScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := newFwdEnv()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := env.run(t, d)
			if out == "" {
				return "(no effects)\n"
			}
			return out + "\n"
		})
	})
}

func (e *fwdEnv) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "nodes":
		return e.newNodes(t, d)
	case "deliver", "drop", "dup":
		return e.carry(t, d)
	case "stabilize":
		var out []string
		for round := 0; len(e.net) > 0; round++ {
			if round == 100 {
				t.Fatalf("still %d messages in flight after 100 rounds", len(e.net))
			}
			batch := e.net
			e.net = nil
			for _, m := range batch {
				out = append(out, e.deliver(m)...)
			}
		}
		return strings.Join(out, "\n")
	case "net":
		var out []string
		for _, m := range e.net {
			out = append(out, fmt.Sprintf("%s → %s %s %s", m.from, m.to, m.p.Kind, e.message(m.p.Msg)))
		}
		if len(out) == 0 {
			return "nothing in flight"
		}
		return strings.Join(out, "\n")
	case "tick":
		by := time.Second
		d.MaybeScanArgs(t, "by", &by)
		e.now = e.now.Add(by)
		var out []string
		for _, n := range e.nodesArg(t, d, "nodes") {
			out = append(out, e.step(n, LeaseTick{}, "")...)
		}
		return strings.Join(out, "\n")
	}
	n := e.node(t, d.CmdArgs[0].Key)
	arg := ""
	if len(d.CmdArgs) > 1 && len(d.CmdArgs[1].Vals) == 0 {
		arg = d.CmdArgs[1].Key
	}
	var ev Event
	switch d.Cmd {
	case "forward":
		var to string
		var hops int
		d.ScanArgs(t, "to", &to)
		if hops = 1; d.HasArg("hops") {
			d.ScanArgs(t, "hops", &hops)
		}
		spec := e.spec(t, d, arg)
		owner := e.owner(d)
		var w string
		if d.MaybeScanArgs(t, "owner-worker", &w); w != "" {
			ownerNode := n
			var on string
			if d.MaybeScanArgs(t, "owner-node", &on); on != "" {
				ownerNode = e.node(t, on)
			}
			spec.OwnerId, spec.OwnerAddress = e.id(w).Bytes(), ownerNode.id.String()
		}
		if d.HasArg("relay") {
			owner = n.gw
		}
		ev = SendTask{Node: e.node(t, to).id, Spec: spec, Owner: owner, Relay: d.HasArg("relay"), Hops: int32(hops)}
	case "call":
		var to, addr string
		d.ScanArgs(t, "to", &to)
		d.ScanArgs(t, "addr", &addr)
		ev = SendCall{Node: e.node(t, to).id, Address: addr, Spec: e.spec(t, d, arg), Caller: e.owner(d)}
	case "cancel":
		ev = CancelSent{Task: e.id(arg), NonRecursive: d.HasArg("non-recursive")}
	case "result", "item":
		spec := e.spec(t, d, arg)
		res := &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, ActorCrashed: d.HasArg("crashed")}
		var code string
		if d.MaybeScanArgs(t, "error", &code); code != "" {
			c, ok := atollpb.ErrorCode_value[code]
			if !ok {
				t.Fatalf("unknown error code %q", code)
			}
			res.Error = &atollpb.ErrorInfo{Code: atollpb.ErrorCode(c), Message: strings.ToLower(code)}
		}
		var size int
		d.MaybeScanArgs(t, "size", &size)
		value := &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: make([]byte, size)}}
		if d.HasArg("stored") { // stored in this node's store
			value = &atollpb.Value{Kind: &atollpb.Value_Stored{Stored: &atollpb.ObjectLocation{Length: 1 << 20, NodeId: n.id.Bytes()}}}
		}
		if d.Cmd == "item" {
			var index int
			d.ScanArgs(t, "index", &index)
			res.GeneratorItem = &atollpb.GeneratorItem{Index: int64(index)}
		}
		res.Returns = []*atollpb.ReturnObject{{ObjectId: ids.ReturnObjectID(e.id(arg), 1).Bytes(), Value: value}}
		ev = LocalResult{Result: res}
	case "ack":
		var attempt, link, consumed int
		d.MaybeScanArgs(t, "attempt", &attempt)
		d.MaybeScanArgs(t, "link", &link)
		d.MaybeScanArgs(t, "consumed", &consumed)
		ev = PassAck{Ack: &atollpb.GeneratorAck{TaskId: e.id(arg).Bytes(), Attempt: int32(attempt), Consumed: int64(consumed)}, Hops: int32(link)}
	case "no-host":
		var addr string
		d.ScanArgs(t, "addr", &addr)
		ev = NoHost{Address: addr}
	case "join":
		var node string
		d.ScanArgs(t, "node", &node)
		ev = PeerJoined{Node: e.id(node)}
	case "arrive":
		// Work from a node that may be no member: arrive n2 t1 from=x9
		// [addr=h1: an actor call].
		var from, addr string
		d.ScanArgs(t, "from", &from)
		d.MaybeScanArgs(t, "addr", &addr)
		spec := e.spec(t, d, arg)
		var m proto.Message = &atollpb.ForwardTask{Spec: spec, OriginNode: e.id(from).Bytes(), Hops: 1}
		if addr != "" {
			m = &atollpb.ForwardActorCall{Address: addr, Spec: spec, OriginNode: e.id(from).Bytes()}
		}
		ev = Received{Msg: m}
	case "gone":
		var node string
		d.ScanArgs(t, "node", &node)
		ev = PeerGone{Node: e.node(t, node).id, Died: d.HasArg("died")}
	case "load":
		var from, addr string
		var cpu, avail float64
		d.ScanArgs(t, "from", &from)
		d.MaybeScanArgs(t, "cpu", &cpu)
		if avail = cpu; d.HasArg("avail") {
			d.ScanArgs(t, "avail", &avail)
		}
		d.MaybeScanArgs(t, "addr", &addr)
		var freeSeq uint64
		d.MaybeScanArgs(t, "free-seq", &freeSeq)
		ev = Received{Msg: &atollpb.NodeLoad{NodeId: e.id(from).Bytes(), Total: map[string]float64{"CPU": cpu}, Available: map[string]float64{"CPU": avail},
			Draining: d.HasArg("draining"), Leaving: d.HasArg("leaving"), TransferAddress: addr, FreeSeq: freeSeq}}
	case "owner-exited":
		ev = OwnerExited{Worker: e.id(arg)}
	case "copies":
		m := &atollpb.ObjectCopies{ObjectId: e.object(arg).Bytes(), Dropped: d.HasArg("dropped")}
		for _, name := range listArg(d, "nodes") {
			m.NodeIds = append(m.NodeIds, e.id(name).Bytes())
		}
		ev = Received{Msg: m}
	case "free":
		ev = Received{Msg: &atollpb.FreeObjects{ObjectIds: [][]byte{e.object(arg).Bytes()}}}
	case "send-free": // send-free n1 x1 [revived] [strays=n2]: an owner of n1 frees x1 (strays: n2's copy only)
		fr := Free{Objects: [][]byte{e.object(arg).Bytes()}, Revived: d.HasArg("revived")}
		var on string
		if d.MaybeScanArgs(t, "strays", &on); on != "" {
			fr.StrayOn = e.node(t, on).id
		}
		ev = fr
	case "locate":
		var nodes []string
		for _, id := range n.core.Copies(e.object(arg)) {
			nodes = append(nodes, e.name(id.Bytes()))
		}
		return "copies [" + strings.Join(nodes, " ") + "]"
	case "unavailable":
		n.unavailable = arg != "off"
		return ""
	case "answer":
		var node, code string
		d.ScanArgs(t, "node", &node)
		var err error
		if d.MaybeScanArgs(t, "error", &code); code != "" {
			c, ok := atollpb.ErrorCode_value[code]
			if !ok {
				t.Fatalf("unknown error code %q", code)
			}
			err = errs.FromProto(&atollpb.ErrorInfo{Code: atollpb.ErrorCode(c), Message: strings.ToLower(code)})
		}
		ev = ReportAnswered{Node: e.node(t, node).id, Err: err}
	case "state":
		return e.state(n)
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return strings.Join(e.step(n, ev, ""), "\n")
}

// newNodes starts the Forwarders of the nodes named, all with the same
// limits.
func (e *fwdEnv) newNodes(t *testing.T, d *datadriven.TestData) string {
	cfg := ForwarderConfig{ForwardLease: 10 * time.Second, MaxPayload: 1 << 20}
	d.MaybeScanArgs(t, "lease", &cfg.ForwardLease)
	d.MaybeScanArgs(t, "max-per-origin", &cfg.MaxForwardedPerOrigin)
	d.MaybeScanArgs(t, "max", &cfg.MaxForwarded)
	d.MaybeScanArgs(t, "max-bytes-per-origin", &cfg.MaxForwardedBytesPerOrigin)
	d.MaybeScanArgs(t, "max-bytes", &cfg.MaxForwardedBytes)
	d.MaybeScanArgs(t, "max-dead", &cfg.MaxDeadNodes)
	d.MaybeScanArgs(t, "max-payload", &cfg.MaxPayload)
	var head string
	d.MaybeScanArgs(t, "head", &head)
	fresh := map[*fwdNode]bool{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) > 0 {
			continue
		}
		c := cfg
		c.Self, c.IsHead = e.id(a.Key), a.Key == head
		n := &fwdNode{name: a.Key, id: c.Self, core: newForwarder(c, newOwners(DefaultMaxOwners, nil)), gw: actor.NewPID("nonhost", a.Key+"/gateway")}
		e.nodes = append(e.nodes, n)
		e.byName[n.name], e.byID[n.id] = n, n
		fresh[n] = true
	}
	// Gossip has every node as a member of every other, the new ones
	// joining (join and gone commands change that).
	for _, n := range e.nodes {
		for _, m := range e.nodes {
			if !fresh[n] && !fresh[m] {
				continue
			}
			if out := e.step(n, PeerJoined{Node: m.id}, ""); len(out) > 0 {
				t.Fatalf("%s hearing %s joined: %v", n.name, m.name, out)
			}
		}
	}
	return ""
}

// carry delivers, drops or duplicates the messages in flight that match
// the command's filters (at most n of them), oldest first.
func (e *fwdEnv) carry(t *testing.T, d *datadriven.TestData) string {
	var from, to, kind string
	limit := -1
	d.MaybeScanArgs(t, "from", &from)
	d.MaybeScanArgs(t, "to", &to)
	d.MaybeScanArgs(t, "kind", &kind)
	d.MaybeScanArgs(t, "n", &limit)
	var picked, rest []envelope
	for _, m := range e.net {
		if limit != 0 && (from == "" || m.from == from) && (to == "" || m.to == to) && (kind == "" || m.p.Kind == kind) {
			picked = append(picked, m)
			limit--
			continue
		}
		rest = append(rest, m)
	}
	var out []string
	switch d.Cmd {
	case "deliver":
		e.net = rest
		for _, m := range picked {
			out = append(out, e.deliver(m)...)
		}
	case "drop":
		e.net = rest
		for _, m := range picked {
			out = append(out, fmt.Sprintf("dropped %s → %s %s %s", m.from, m.to, m.p.Kind, e.message(m.p.Msg)))
		}
	case "dup":
		for _, m := range picked {
			e.net = append(e.net, m)
			out = append(out, fmt.Sprintf("duplicated %s → %s %s %s", m.from, m.to, m.p.Kind, e.message(m.p.Msg)))
		}
	}
	if len(out) == 0 {
		return "nothing in flight matches"
	}
	return strings.Join(out, "\n")
}

func (e *fwdEnv) node(t *testing.T, name string) *fwdNode {
	n := e.byName[name]
	if n == nil {
		t.Fatalf("no node %q", name)
	}
	return n
}

// nodesArg returns the nodes listed in key, or every node.
func (e *fwdEnv) nodesArg(t *testing.T, d *datadriven.TestData, key string) []*fwdNode {
	names := listArg(d, key)
	if len(names) == 0 {
		return e.nodes
	}
	var out []*fwdNode
	for _, name := range names {
		out = append(out, e.node(t, name))
	}
	return out
}

// spec is the task spec of the command's task: [attempt=N] [size=N] (an
// inline argument of N bytes).
func (e *fwdEnv) spec(t *testing.T, d *datadriven.TestData, name string) *atollpb.TaskSpec {
	var attempt, size int
	d.MaybeScanArgs(t, "attempt", &attempt)
	spec := &atollpb.TaskSpec{TaskId: e.id(name).Bytes(), Name: name, Attempt: int32(attempt), NumReturns: 1}
	if d.Cmd == "forward" || d.Cmd == "call" {
		d.MaybeScanArgs(t, "size", &size)
	}
	if size > 0 {
		spec.Args = []*atollpb.TaskArg{{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: make([]byte, size)}}}}}
	}
	spec.Generator = d.HasArg("generator")
	return spec
}

func (e *fwdEnv) owner(d *datadriven.TestData) *actor.PID {
	name := "o1"
	for _, a := range d.CmdArgs {
		if a.Key == "owner" && len(a.Vals) > 0 {
			name = a.Vals[0]
		}
	}
	return actor.NewPID("nonhost", name)
}

func (e *fwdEnv) object(name string) ids.ObjectID { return ids.ReturnObjectID(e.id(name), 1) }

// listArg returns the comma-separated values of key.
func listArg(d *datadriven.TestData, key string) []string {
	var out []string
	for _, a := range d.CmdArgs {
		if a.Key == key {
			for _, v := range a.Vals {
				out = append(out, strings.Split(v, ",")...)
			}
		}
	}
	return out
}
