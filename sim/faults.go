package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// Faults. A run's faults are a schedule: a list of faults at simulated
// times, drawn from the seed before the run starts (swarm testing: each
// seed picks which kinds it uses, how many and where), or given (a
// schedule file, a fault plan). A shrinker removes faults from a failing
// schedule while the run still fails; the schedule that remains replays
// exactly with the same seed.

// The actions of a fault.
const (
	actPartition  = "partition"   // cut the links between groups of nodes, both ways, for For
	actCut        = "cut"         // cut the link from Nodes[0] to Nodes[1], one way, for For
	actCrash      = "crash"       // a node dies; a new node replaces it For later (0: never)
	actKillWorker = "kill-worker" // a worker or actor process dies mid-task
	actDrop       = "drop"        // messages of a type lost, with a probability, at most Count
	actDuplicate  = "duplicate"   // ... delivered twice
	actDelay      = "delay"       // ... delayed by up to Delay (their link's order broken)
	actDiskFull   = "disk-full"   // a node's spill writes fail with ENOSPC for For
	actDiskSlow   = "disk-slow"   // its spill writes and restores take Delay more, for For
	actDiskFail   = "disk-fail"   // half its spill writes fail with EIO, for For
	actSkew       = "skew"        // a node's clock jumps by Delay (negative: back)
	actStoreFull  = "store-full"  // a node's store fails its next Count creations
)

// Fault is one fault of a schedule. The fields used depend on Action.
type Fault struct {
	Action string        `yaml:"action" json:"action"`
	At     time.Duration `yaml:"at" json:"at"`
	For    time.Duration `yaml:"for,omitempty" json:"for,omitempty"`
	// Nodes are the nodes it acts on (by name: n1 is the head); Groups a
	// partition's sides (nodes not named join the first).
	Nodes  []string   `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	Groups [][]string `yaml:"groups,omitempty" json:"groups,omitempty"`
	// KeepDisk: a crashed node's replacement gets its disk.
	KeepDisk bool `yaml:"keep_disk,omitempty" json:"keep_disk,omitempty"`
	// Message faults: the message's type and the receiving actor's kind
	// (as fault plans name them), a probability, at most Count faults
	// (0: no bound), from At for For (0: to the end).
	Message     string        `yaml:"message,omitempty" json:"message,omitempty"`
	Actor       string        `yaml:"actor,omitempty" json:"actor,omitempty"`
	Probability float64       `yaml:"probability,omitempty" json:"probability,omitempty"`
	Count       int           `yaml:"count,omitempty" json:"count,omitempty"`
	Delay       time.Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	// Point, for kill-worker: "" (at At, a process running a task),
	// before-execute or after-execute (each attempt there, with
	// Probability, at most Count).
	Point string `yaml:"point,omitempty" json:"point,omitempty"`
}

// String renders a fault on one line, as ParseFault reads it:
//
//	<at> <action> [nodes=n2,n3] [groups=n1,n3|n2] [for=<d>] [msg=<type>@<actor>]
//	    [p=<probability>] [count=<n>] [delay=<d>] [point=<point>] [keep-disk]
func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %s", f.At, f.Action)
	if len(f.Nodes) > 0 {
		b.WriteString(" nodes=" + strings.Join(f.Nodes, ","))
	}
	if len(f.Groups) > 0 {
		var g []string
		for _, grp := range f.Groups {
			g = append(g, strings.Join(grp, ","))
		}
		b.WriteString(" groups=" + strings.Join(g, "|"))
	}
	if f.For > 0 {
		fmt.Fprintf(&b, " for=%v", f.For)
	}
	if f.Message != "" {
		fmt.Fprintf(&b, " msg=%s@%s", f.Message, f.Actor)
	}
	if f.Probability > 0 {
		fmt.Fprintf(&b, " p=%g", f.Probability)
	}
	if f.Count > 0 {
		fmt.Fprintf(&b, " count=%d", f.Count)
	}
	if f.Delay != 0 {
		fmt.Fprintf(&b, " delay=%v", f.Delay)
	}
	if f.Point != "" {
		b.WriteString(" point=" + f.Point)
	}
	if f.KeepDisk {
		b.WriteString(" keep-disk")
	}
	return b.String()
}

// FaultConfig says how a seed draws its schedule.
type FaultConfig struct {
	// Max is the most faults a schedule has (default 8; 0 faults is one
	// of the draws). Off: no faults.
	Max int
	Off bool
	// Horizon: faults start within it (default 20s).
	Horizon time.Duration
	// Actions are the kinds drawn from (default all of them); each seed
	// uses a random subset (swarm testing).
	Actions []string
	// DriverNode: the driver's node's index, no crash is drawn on it
	// (Config.DriverNode sets it).
	DriverNode int
}

// AllActions lists every fault action.
var AllActions = []string{actPartition, actCut, actCrash, actKillWorker, actDrop, actDuplicate, actDelay, actDiskFull, actDiskSlow,
	actDiskFail, actSkew, actStoreFull}

// messageFaults are the message faults a schedule draws: the messages the
// runtime claims to survive losing (the control plane between nodes,
// over NATS: leases and retries recover; transfers: other copies or
// lineage), duplicating (results apply once, submissions and calls are
// deduplicated) and delaying (calls are ordered by sequence number).
var messageFaults = map[string][][2]string{
	actDrop: {{"ForwardTask", "gateway"}, {"ForwardActorCall", "gateway"}, {"ForwardedResult", "gateway"}, {"HeldWork", "gateway"},
		{"NodeLoad", "gateway"}, {"ObjectCopies", "gateway"}, {"PullRequest", "objectstore"}, {"LocateRequest", "gateway"},
		{"FreeObjects", "gateway"}, {"FreeRepair", "gateway"}},
	actDuplicate: {{"TaskResult", "owner"}, {"SubmitTask", "raylet"}, {"PushTask", "actor"}, {"ForwardTask", "gateway"},
		{"ForwardedResult", "gateway"}, {"ForwardActorCall", "gateway"}, {"NodeLoad", "gateway"}, {"HeldWork", "gateway"},
		{"FreeObjects", "gateway"}},
	actDelay: {{"TaskResult", "owner"}, {"SubmitTask", "raylet"}, {"PushTask", "actor"}, {"ForwardTask", "gateway"},
		{"ForwardedResult", "gateway"}, {"ForwardActorCall", "gateway"}, {"HeldWork", "gateway"}, {"NodeLoad", "gateway"},
		{"ObjectCopies", "gateway"}, {"ActorInfo", "owner"}},
}

// Generate draws the schedule of seed for a cluster of nodes.
func Generate(seed uint64, nodes int, fc FaultConfig) []Fault {
	if fc.Off {
		return nil
	}
	if fc.Max <= 0 {
		fc.Max = 8
	}
	if fc.Horizon <= 0 {
		fc.Horizon = 20 * time.Second
	}
	actions := fc.Actions
	if len(actions) == 0 {
		actions = AllActions
	}
	r := stream(seed, 7)
	// Swarm testing: a random non-empty subset of the actions.
	var use []string
	for _, a := range actions {
		if r.IntN(2) == 0 {
			use = append(use, a)
		}
	}
	if len(use) == 0 {
		use = []string{actions[r.IntN(len(actions))]}
	}
	k := r.IntN(fc.Max + 1)
	out := make([]Fault, 0, k)
	for i := 0; i < k; i++ {
		f := drawFault(r, use[r.IntN(len(use))], nodes, fc.DriverNode, fc.Horizon)
		if f.Action != "" {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func nodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

func drawFault(r *rand.Rand, action string, nodes, driver int, horizon time.Duration) Fault {
	f := Fault{Action: action, At: time.Duration(r.Int64N(int64(horizon))).Truncate(time.Millisecond)}
	dur := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(r.Int64N(int64(hi-lo)))).Truncate(time.Millisecond)
	}
	// worker: a node other than the head and the driver's (which the
	// simulator never crashes: they hold the GCS and the driver).
	worker := func() string {
		if driver <= 0 {
			if nodes < 2 {
				return ""
			}
			return nodeName(1 + r.IntN(nodes-1))
		}
		if nodes < 3 {
			return ""
		}
		i := 1 + r.IntN(nodes-2)
		if i >= driver {
			i++
		}
		return nodeName(i)
	}
	switch action {
	case actPartition:
		if nodes < 2 {
			return Fault{}
		}
		perm := r.Perm(nodes)
		g := 2 + r.IntN(2)
		if g > nodes {
			g = nodes
		}
		groups := make([][]string, g)
		for i, n := range perm {
			if driver > 0 && n == driver {
				continue // it goes with the head (below)
			}
			groups[i%g] = append(groups[i%g], nodeName(n))
		}
		if driver > 0 {
			// A driver's node cut off from the head past the failure
			// budget is declared dead and exits with the driver: the job
			// ends. The head's side keeps it.
			for i, grp := range groups {
				if slices.Contains(grp, nodeName(0)) {
					groups[i] = append(grp, nodeName(driver))
				}
			}
		}
		for _, grp := range groups {
			sort.Strings(grp)
		}
		f.Groups, f.For = groups, dur(500*time.Millisecond, 12*time.Second)
	case actCut:
		if nodes < 2 {
			return Fault{}
		}
		a := r.IntN(nodes)
		b := (a + 1 + r.IntN(nodes-1)) % nodes
		f.Nodes, f.For = []string{nodeName(a), nodeName(b)}, dur(500*time.Millisecond, 12*time.Second)
		if driver > 0 && min(a, b) == 0 && max(a, b) == driver {
			f.For = min(f.For, 2*time.Second) // the driver's node and the head: under the failure budget
		}
	case actCrash:
		v := worker()
		if v == "" {
			return Fault{}
		}
		f.Nodes = []string{v}
		if r.IntN(4) > 0 {
			f.For = dur(time.Second, 10*time.Second)
			f.KeepDisk = r.IntN(2) == 0
		}
	case actKillWorker:
		f.Nodes = []string{nodeName(r.IntN(nodes))}
		switch r.IntN(4) {
		case 0:
			f.Point, f.Probability, f.Count = "before-execute", 0.05+0.2*r.Float64(), 1+r.IntN(3)
		case 1:
			f.Point, f.Probability, f.Count = "after-execute", 0.05+0.2*r.Float64(), 1+r.IntN(3)
		}
	case actDrop, actDuplicate, actDelay:
		m := messageFaults[action][r.IntN(len(messageFaults[action]))]
		f.Message, f.Actor = m[0], m[1]
		f.Probability = float64(int(1000*(0.02+0.25*r.Float64()))) / 1000
		f.Count = 1 + r.IntN(20)
		f.For = dur(time.Second, 15*time.Second)
		if action == actDelay {
			f.Delay = dur(time.Millisecond, 2*time.Second)
		}
	case actDiskFull, actDiskFail:
		f.Nodes, f.For = []string{nodeName(r.IntN(nodes))}, dur(500*time.Millisecond, 8*time.Second)
	case actDiskSlow:
		f.Nodes, f.For, f.Delay = []string{nodeName(r.IntN(nodes))}, dur(time.Second, 10*time.Second), dur(time.Millisecond, 200*time.Millisecond)
	case actSkew:
		f.Nodes = []string{nodeName(r.IntN(nodes))}
		f.Delay = dur(100*time.Millisecond, 20*time.Second)
		if r.IntN(2) == 0 {
			f.Delay = -f.Delay
		}
	case actStoreFull:
		f.Nodes, f.Count = []string{nodeName(r.IntN(nodes))}, 1+r.IntN(4)
	default:
		return Fault{}
	}
	return f
}

// faultRun applies a schedule to a world.
type faultRun struct {
	w        *World
	schedule []Fault
	// active message faults and kill-worker points, with what they have
	// left.
	messages []*activeFault
	points   []*activeFault
	applied  int
	// restarts: a crashed node's replacement is due.
	exited map[*node]bool
}

type activeFault struct {
	f    Fault
	name string
	// r draws its decisions: its own generator, seeded from the run's
	// seed and the fault's text, so that removing another fault from
	// the schedule (a shrink) leaves its draws alone.
	r     *rand.Rand
	from  time.Time
	until time.Time
	left  int
	// action, delay: copies for the network.
	action string
	delay  time.Duration
}

// faultRand is the generator of one fault of a run.
func (w *World) faultRand(f Fault) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(f.String()))
	return stream(w.cfg.Seed^h.Sum64(), 11)
}

func (w *World) startFaults(schedule []Fault) {
	fr := &faultRun{w: w, schedule: schedule, exited: map[*node]bool{}}
	w.faults = fr
	for i, f := range schedule {
		f := f
		name := fmt.Sprintf("#%d %s", i+1, f.Action)
		w.at(Epoch.Add(f.At), func() { fr.apply(name, f) })
	}
}

// nodeNamed is the live node the schedule names (nil if it is down or
// never was).
func (w *World) nodeNamed(name string) *node {
	n := w.byName[name]
	if n == nil || !n.up {
		return nil
	}
	return n
}

func (fr *faultRun) apply(name string, f Fault) {
	w := fr.w
	fr.applied++
	w.check.faultsHit++
	w.log.add("fault %s: %s", name, f)
	until := time.Time{}
	if f.For > 0 {
		until = w.now.Add(f.For)
	}
	switch f.Action {
	case actPartition:
		var cuts [][2]*node
		side := map[*node]int{}
		for i, grp := range f.Groups {
			for _, nm := range grp {
				if n := w.byName[nm]; n != nil {
					side[n] = i
				}
			}
		}
		for _, a := range w.nodes {
			for _, b := range w.nodes {
				if a != b && side[a] != side[b] && !w.net.cut[a][b] {
					w.net.setCut(a, b, true)
					cuts = append(cuts, [2]*node{a, b})
				}
			}
		}
		w.healAfter(name, f.For, cuts)
	case actCut:
		if len(f.Nodes) != 2 {
			return
		}
		a, b := w.byName[f.Nodes[0]], w.byName[f.Nodes[1]]
		if a == nil || b == nil || w.net.cut[a][b] {
			return
		}
		w.net.setCut(a, b, true)
		w.healAfter(name, f.For, [][2]*node{{a, b}})
	case actCrash:
		for _, nm := range f.Nodes {
			n := w.nodeNamed(nm)
			if n == nil || n.head || w.driver != nil && n == w.driver.node {
				continue // the GCS and the driver stay up
			}
			n.crash("fault " + name)
			if f.For > 0 {
				d := n.disk
				if !f.KeepDisk {
					d = nil
				}
				w.after(f.For, func() {
					nn := w.addNode(d)
					w.log.add("fault %s: %s replaces %s", name, nn.name, n.name)
				})
			}
		}
	case actKillWorker:
		if f.Point != "" {
			fr.points = append(fr.points, &activeFault{f: f, name: name, from: w.now, left: f.Count, r: w.faultRand(f)})
			return
		}
		r := w.faultRand(f)
		for _, nm := range f.Nodes {
			if n := w.nodeNamed(nm); n != nil {
				n.killBusyProcess(r, "fault "+name)
			}
		}
	case actDrop, actDuplicate, actDelay:
		fr.messages = append(fr.messages, &activeFault{f: f, name: name, from: w.now, until: until, left: f.Count, action: f.Action, delay: f.Delay,
			r: w.faultRand(f)})
	case actDiskFull, actDiskSlow, actDiskFail:
		for _, nm := range f.Nodes {
			n := w.nodeNamed(nm)
			if n == nil {
				continue
			}
			switch f.Action {
			case actDiskFull:
				n.disk.fullUntil = until
			case actDiskSlow:
				n.disk.slowUntil, n.disk.slow = until, f.Delay
			case actDiskFail:
				n.disk.failUntil = until
			}
		}
	case actSkew:
		for _, nm := range f.Nodes {
			if n := w.nodeNamed(nm); n != nil {
				n.skew += f.Delay
			}
		}
	case actStoreFull:
		for _, nm := range f.Nodes {
			if n := w.nodeNamed(nm); n != nil {
				n.store.failCreates += max(f.Count, 1)
			}
		}
	}
}

// healAfter restores cut links after d.
func (w *World) healAfter(name string, d time.Duration, cuts [][2]*node) {
	if d <= 0 || len(cuts) == 0 {
		return
	}
	w.after(d, func() {
		for _, c := range cuts {
			w.net.setCut(c[0], c[1], false)
		}
		w.log.add("fault %s heals", name)
		w.flushBuffered()
	})
}

// healAll ends every fault: links restored, buffers flushed, message
// faults and points off, disks well (the liveness phase).
func (fr *faultRun) healAll() {
	w := fr.w
	for _, a := range w.nodes {
		for _, b := range w.nodes {
			w.net.setCut(a, b, false)
		}
	}
	fr.messages, fr.points = nil, nil
	for _, n := range w.nodes {
		n.disk.fullUntil, n.disk.slowUntil, n.disk.failUntil = time.Time{}, time.Time{}, time.Time{}
		if n.up {
			n.store.failCreates = 0
		}
	}
	w.flushBuffered()
	w.log.add("faults healed")
}

// messageFault returns the fault that hits m, if any.
func (fr *faultRun) messageFault(m *msg) *activeFault {
	if fr == nil || len(fr.messages) == 0 {
		return nil
	}
	w := fr.w
	for _, af := range fr.messages {
		f := af.f
		if af.left == 0 && f.Count > 0 || (!af.until.IsZero() && !w.now.Before(af.until)) {
			continue
		}
		if f.Message != "*" && f.Message != m.kind || f.Actor != "" && f.Actor != m.actor {
			continue
		}
		if af.action == actDrop && m.path == pathLocal {
			continue // local messages are never lost
		}
		if len(f.Nodes) > 0 && !slices.Contains(f.Nodes, m.to.name) {
			continue
		}
		if af.r.Float64() >= f.Probability {
			continue
		}
		if f.Count > 0 {
			af.left--
		}
		return af
	}
	return nil
}

// killAt reports whether a kill-worker point hits an attempt.
func (fr *faultRun) killAt(point string, n *node) (string, bool) {
	if fr == nil {
		return "", false
	}
	for _, af := range fr.points {
		f := af.f
		if f.Point != point || f.Count > 0 && af.left == 0 {
			continue
		}
		if len(f.Nodes) > 0 && !slices.Contains(f.Nodes, n.name) {
			continue
		}
		if af.r.Float64() >= f.Probability {
			continue
		}
		if f.Count > 0 {
			af.left--
		}
		return af.name, true
	}
	return "", false
}

// nodeExited: a node that learnt it was dead exited; a supervisor starts
// a new one (with its disk) a moment later.
func (fr *faultRun) nodeExited(n *node) {
	w := fr.w
	w.after(2*time.Second, func() {
		nn := w.addNode(n.disk)
		w.log.add("%s replaces %s, which exited", nn.name, n.name)
	})
}

// killBusyProcess kills a worker or actor process of n that runs
// something, else any worker process.
func (n *node) killBusyProcess(r *rand.Rand, why string) {
	w := n.w
	var busy, any []*proc
	for _, p := range w.sortedProcs() {
		if !p.alive || p.node != n || p.kind == "driver" {
			continue
		}
		any = append(any, p)
		if len(p.threads) > 0 {
			busy = append(busy, p)
		}
	}
	pick := busy
	if len(pick) == 0 {
		pick = any
	}
	if len(pick) == 0 {
		w.log.add("%s: no process to kill", n.name)
		return
	}
	p := pick[r.IntN(len(pick))]
	n.killProcess(p, why)
}

// killProcess kills a worker's or an actor's process.
func (n *node) killProcess(p *proc, why string) {
	if s := n.workers[p.id]; s != nil && s.p == p {
		n.crashWorker(s, why)
		return
	}
	for _, h := range n.sortedHosts() {
		if h.p == p && !h.gone {
			h.crashProcess(why)
			return
		}
	}
	p.die(why)
}
