package interaction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Epoch is when every script starts; the clock moves only with tick.
var Epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// The background's periods (the production defaults): gateways confirm
// the work they hold every ConfirmInterval, and membership declares a
// node it cannot reach dead after FailureBudget.
const (
	ConfirmInterval = cluster.DefaultConfirmInterval
	FailureBudget   = membership.DefaultFailureBudget
)

// Env holds every party of a scripted cluster and the messages in flight
// between them. See the package doc for the parties and the commands.
type Env struct {
	now time.Time
	// ids gives every name a fixed id, names the way back.
	ids    map[string]ids.ID16
	names  map[ids.ID16]string
	objs   map[string]ids.ObjectID
	onames map[ids.ObjectID]string

	nodes  []*node // in the order they were added
	byNode map[string]*node
	procs  map[string]*process // owner processes (drivers, workers' and actors' processes), by name
	hosts  map[string]*host    // actor hosts, by actor name
	tasks  map[string]*taskInfo
	gcs    *gcs

	net    []*message
	msgSeq int
	// cut are the nodes partitioned from the others (never the head).
	cut map[*node]bool
	// nextLease is when the gateways next confirm the work they hold.
	nextLease time.Time

	ledger ledger
	out    strings.Builder
	indent string
	// fail is the first invariant broken by the current command.
	fail []string
}

// taskInfo is what the harness remembers of a task or call a script
// submitted: its owner, for the checks.
type taskInfo struct {
	name  string
	id    ids.TaskID
	owner *process
	actor string // the actor of a call or creation ("" for a task)
}

// New returns an empty environment at Epoch.
func New() *Env {
	e := &Env{now: Epoch, ids: map[string]ids.ID16{}, names: map[ids.ID16]string{}, objs: map[string]ids.ObjectID{},
		onames: map[ids.ObjectID]string{}, byNode: map[string]*node{}, procs: map[string]*process{}, hosts: map[string]*host{},
		tasks: map[string]*taskInfo{}, cut: map[*node]bool{}, nextLease: Epoch.Add(ConfirmInterval)}
	e.ledger.init()
	return e
}

// Cmd is one command of a script: its name, its arguments (a key alone
// is a positional argument) and its input block.
type Cmd struct {
	Name  string
	Args  []Arg
	Input string
}

// Arg is one argument: key, or key=v, or key=(v1,v2).
type Arg struct {
	Key  string
	Vals []string
}

// Run applies one command and returns what it printed. An error is a
// malformed command; a broken invariant is returned as an error too, after
// the output (the test fails either way).
func (e *Env) Run(c Cmd) (string, error) {
	e.out.Reset()
	e.indent = ""
	e.fail = nil
	if err := e.run(c); err != nil {
		return e.out.String(), err
	}
	e.updateReachability()
	e.checkInvariants()
	out := e.out.String()
	if out == "" {
		out = "ok\n"
	}
	if len(e.fail) > 0 {
		return out, fmt.Errorf("invariants broken after %s:\n  %s", c.Name, strings.Join(e.fail, "\n  "))
	}
	return out, nil
}

func (e *Env) run(c Cmd) error {
	switch c.Name {
	case "add-node":
		return e.cmdAddNode(c)
	case "add-driver":
		return e.cmdAddDriver(c)
	case "gossip":
		e.gossip()
	case "put", "release", "submit", "call", "create-actor", "cancel":
		return e.cmdOwner(c)
	case "finish":
		return e.cmdFinish(c)
	case "crash":
		return e.cmdCrash(c)
	case "deliver", "drop", "hold", "release-held", "duplicate":
		return e.cmdNet(c)
	case "stabilize":
		e.stabilize()
	case "partition":
		return e.cmdPartition(c)
	case "heal":
		e.heal()
	case "tick":
		d, err := time.ParseDuration(c.pos(0))
		if err != nil {
			return fmt.Errorf("tick: %v", err)
		}
		e.tick(d)
	case "drain":
		return e.cmdDrain(c)
	case "amm-round":
		e.ammRound()
	case "where":
		return e.cmdWhere(c)
	case "net":
		e.printNet()
	case "state":
		return e.cmdState(c)
	default:
		return fmt.Errorf("unknown command %q", c.Name)
	}
	return nil
}

// Output.

func (e *Env) printf(format string, args ...any) {
	e.out.WriteString(e.indent)
	fmt.Fprintf(&e.out, format, args...)
	e.out.WriteByte('\n')
}

// nested runs f with its output indented one more level.
func (e *Env) nested(f func()) {
	old := e.indent
	e.indent += "  "
	f()
	e.indent = old
}

// violate records a broken invariant.
func (e *Env) violate(format string, args ...any) {
	e.fail = append(e.fail, fmt.Sprintf(format, args...))
}

// Names and ids.

// id gives name a fixed id: a sequence number, then the name, so that
// Short (the first 4 bytes) tells names apart.
func (e *Env) id(name string) ids.ID16 {
	if id, ok := e.ids[name]; ok {
		return id
	}
	var id ids.ID16
	id[0] = byte(len(e.ids) + 1)
	copy(id[1:], name)
	e.ids[name], e.names[id] = id, name
	return id
}

// name is what scripts call an id (its short hex if it has no name).
func (e *Env) name(b []byte) string {
	id, err := ids.FromBytes(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	if n, ok := e.names[id]; ok {
		return n
	}
	return id.Short()
}

// object is the id of an object name: t1.0 is task t1's first return,
// any other name an object put by a process.
func (e *Env) object(name string) ids.ObjectID {
	if id, ok := e.objs[name]; ok {
		return id
	}
	var id ids.ObjectID
	if task, idx, ok := strings.Cut(name, "."); ok {
		i, err := strconv.Atoi(idx)
		if err != nil {
			i = 0
		}
		id = ids.ReturnObjectID(e.id(task), i)
	} else {
		id = ids.PutObjectID(e.id("put:"+name), 1)
	}
	e.objs[name], e.onames[id] = id, name
	return id
}

func (e *Env) oname(id ids.ObjectID) string {
	if n, ok := e.onames[id]; ok {
		return n
	}
	return id.Short()
}

func (e *Env) onameBytes(b []byte) string {
	id, err := ids.ObjectIDFromBytes(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return e.oname(id)
}

func (e *Env) onameList(l []ids.ObjectID) string {
	out := make([]string, len(l))
	for i, id := range l {
		out[i] = e.oname(id)
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// unhex replaces the ids in s (full and short hex) with their names.
func (e *Env) unhex(s string) string {
	if !strings.ContainsAny(s, "0123456789abcdef") {
		return s
	}
	for id, n := range e.onames {
		s = strings.ReplaceAll(s, id.String(), n)
	}
	for id, n := range e.names {
		s = strings.ReplaceAll(s, id.String(), n)
	}
	for id, n := range e.names {
		s = strings.ReplaceAll(s, id.Short(), n)
	}
	return s
}

// since prints a time as the offset from Epoch.
func (e *Env) since(t time.Time) string { return t.Sub(Epoch).String() }

// Arguments.

// pos returns the i-th positional argument ("" if none).
func (c Cmd) pos(i int) string {
	n := 0
	for _, a := range c.Args {
		if len(a.Vals) == 0 {
			if n == i {
				return a.Key
			}
			n++
		}
	}
	return ""
}

// posArgs lists the positional arguments.
func (c Cmd) posArgs() []string {
	var out []string
	for i := 0; c.pos(i) != ""; i++ {
		out = append(out, c.pos(i))
	}
	return out
}

func (c Cmd) has(key string) bool {
	for _, a := range c.Args {
		if a.Key == key {
			return true
		}
	}
	return false
}

// val returns key's value (def if absent); a list joins with commas.
func (c Cmd) val(key, def string) string {
	for _, a := range c.Args {
		if a.Key == key && len(a.Vals) > 0 {
			return strings.Join(a.Vals, ",")
		}
	}
	return def
}

// list returns key's values, split at commas.
func (c Cmd) list(key string) []string {
	v := c.val(key, "")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func (c Cmd) int(key string, def int) (int, error) {
	v := c.val(key, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: %v", key, v, err)
	}
	return n, nil
}

func (c Cmd) float(key string, def float64) (float64, error) {
	v := c.val(key, "")
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: %v", key, v, err)
	}
	return f, nil
}

// parseSize reads a script's byte count ("64MiB", "512KiB", "4096").
func parseSize(s string) (uint64, error) {
	n, err := benchfmt.ParseSize(s)
	return uint64(n), err
}
