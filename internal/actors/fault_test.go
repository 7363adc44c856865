package actors

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type (
	num   int
	flush struct{}
)

// recorder reports every num it receives and answers ping and flush.
type recorder struct {
	got chan<- num
}

func (a *recorder) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case num:
		a.got <- m
	case ping, flush:
		c.Respond(pong{})
	}
}

// spawnRecorder spawns a recorder behind f's middleware.
func spawnRecorder(t *testing.T, system *actor.ActorSystem, f *FaultInjector) (*actor.PID, <-chan num) {
	t.Helper()
	got := make(chan num, 1024)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &recorder{got: got} },
		actor.WithReceiverMiddleware(f.ReceiverMiddleware())))
	return pid, got
}

// drain flushes the actor's mailbox and returns every num received so far.
func drain(t *testing.T, system *actor.ActorSystem, pid *actor.PID, got <-chan num) []num {
	t.Helper()
	result(t, system.Root.RequestFuture(pid, flush{}, waitTimeout))
	var out []num
	for {
		select {
		case n := <-got:
			out = append(out, n)
		default:
			return out
		}
	}
}

func TestDropAppliesExactlyN(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	f.Drop(MessageType[num](), 3)
	pid, got := spawnRecorder(t, system, f)
	for i := range 10 {
		system.Root.Send(pid, num(i))
	}
	if want, have := []num{3, 4, 5, 6, 7, 8, 9}, drain(t, system, pid, got); !slices.Equal(have, want) {
		t.Fatalf("received %v, want %v", have, want)
	}
	if s := f.Stats(); s != (Stats{Dropped: 3}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestDropOnlyMatchingType(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	f.Drop(MessageType[ping](), -1)
	pid, got := spawnRecorder(t, system, f)
	system.Root.Send(pid, num(1))
	if _, err := system.Root.RequestFuture(pid, ping{}, 50*time.Millisecond).Result(); err != actor.ErrTimeout {
		t.Fatalf("dropped request: err %v, want timeout", err)
	}
	if have := drain(t, system, pid, got); !slices.Equal(have, []num{1}) {
		t.Fatalf("received %v", have)
	}
}

func TestDuplicateAppliesExactlyN(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	f.Duplicate(MessageType[num](), 2)
	pid, got := spawnRecorder(t, system, f)
	for i := range 5 {
		system.Root.Send(pid, num(i))
	}
	var have []num
	for range 7 {
		have = append(have, recv(t, got))
	}
	have = append(have, drain(t, system, pid, got)...)
	slices.Sort(have)
	if want := []num{0, 0, 1, 1, 2, 3, 4}; !slices.Equal(have, want) {
		t.Fatalf("received %v, want %v", have, want)
	}
	if s := f.Stats(); s != (Stats{Duplicated: 2}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestDuplicateKeepsSender(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	f.Duplicate(MessageType[ping](), 1)
	pid, _ := spawnRecorder(t, system, f)
	// The reply to the duplicate goes to the same sender: capture both.
	replies := make(chan any, 4)
	sender := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case ping:
			c.Request(pid, ping{})
		case pong:
			replies <- m
		}
	}))
	system.Root.Send(sender, ping{})
	recv(t, replies)
	recv(t, replies)
}

func TestDelayDoesNotBlockAndKeepsSender(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	const delay = 100 * time.Millisecond
	f.Delay(MessageType[num](), delay, 1)
	f.Delay(MessageType[ping](), delay, 1)
	pid, got := spawnRecorder(t, system, f)

	start := time.Now()
	system.Root.Send(pid, num(0)) // delayed
	system.Root.Send(pid, num(1))
	system.Root.Send(pid, num(2))
	sent := time.Since(start)
	// The actor keeps working while num(0) waits: 1 and 2 come first
	// (unless this goroutine was descheduled for most of the delay).
	var have []num
	for range 3 {
		have = append(have, recv(t, got))
	}
	if want := []num{1, 2, 0}; !slices.Equal(have, want) && sent < delay/2 {
		t.Fatalf("received %v, want %v", have, want)
	}
	if slices.Sort(have); !slices.Equal(have, []num{0, 1, 2}) {
		t.Fatalf("received %v", have)
	}
	if el := time.Since(start); el < delay {
		t.Fatalf("delayed message arrived after %v < %v", el, delay)
	}

	// A delayed request is still answered to its requester.
	start = time.Now()
	if _, ok := result(t, system.Root.RequestFuture(pid, ping{}, waitTimeout)).(pong); !ok {
		t.Fatal("no pong")
	}
	if el := time.Since(start); el < delay {
		t.Fatalf("delayed request answered after %v < %v", el, delay)
	}
	if s := f.Stats(); s != (Stats{Delayed: 2}) {
		t.Fatalf("stats %+v", s)
	}
	if have := drain(t, system, pid, got); len(have) != 0 {
		t.Fatalf("extra messages %v", have)
	}
}

func TestRulesFirstMatchWinsAndRemove(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	drop := f.Drop(MessageType[num](), -1)
	f.Duplicate(MessageType[num](), -1) // shadowed while drop exists
	pid, got := spawnRecorder(t, system, f)
	system.Root.Send(pid, num(1))
	system.Root.Send(pid, num(2))
	if have := drain(t, system, pid, got); len(have) != 0 {
		t.Fatalf("drop rule let through %v", have)
	}
	if !f.Remove(drop) {
		t.Fatal("Remove: rule not found")
	}
	if f.Remove(drop) {
		t.Fatal("Remove twice succeeded")
	}
	system.Root.Send(pid, num(3))
	if a, b := recv(t, got), recv(t, got); a != 3 || b != 3 {
		t.Fatalf("duplicate rule: received %v, %v", a, b)
	}
	f.Clear()
	system.Root.Send(pid, num(4))
	if have := drain(t, system, pid, got); !slices.Equal(have, []num{4}) {
		t.Fatalf("after Clear received %v, want [4]", have)
	}
	if s := f.Stats(); s != (Stats{Dropped: 2, Duplicated: 1}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestProbabilityRuleIsReproducible(t *testing.T) {
	run := func() []num {
		system := newTestSystem(t)
		f := NewFaultInjector()
		f.Drop(WithProbability(MessageType[num](), 0.5, rand.New(rand.NewPCG(1, 2))), -1)
		pid, got := spawnRecorder(t, system, f)
		for i := range 100 {
			system.Root.Send(pid, num(i))
		}
		have := drain(t, system, pid, got)
		if uint64(len(have))+f.Stats().Dropped != 100 {
			t.Fatalf("received %d + dropped %d != 100", len(have), f.Stats().Dropped)
		}
		return have
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different drops:\n%v\n%v", a, b)
	}
	if len(a) < 25 || len(a) > 75 {
		t.Fatalf("p=0.5 kept %d of 100", len(a))
	}
}

func TestLifecycleMessagesAreNotFaulted(t *testing.T) {
	system := newTestSystem(t)
	f := NewFaultInjector()
	f.Drop(Any(), -1)
	events := make(chan string, 8)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} },
		actor.WithReceiverMiddleware(f.ReceiverMiddleware())))
	if got := recv(t, events); got != "started" {
		t.Fatalf("event %q", got)
	}
	system.Root.Stop(pid)
	if got := recv(t, events); got != "stopped" {
		t.Fatalf("event %q", got)
	}
	if s := f.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestZeroCountRuleIsInert(t *testing.T) {
	f := NewFaultInjector()
	id := f.Drop(Any(), 0)
	if f.Remove(id) {
		t.Fatal("a rule with n == 0 was kept")
	}
	if _, _, ok := f.decide(num(1), "x"); ok {
		t.Fatal("inert rule applied")
	}
}

func TestFaultKindString(t *testing.T) {
	for k, want := range map[FaultKind]string{FaultDrop: "drop", FaultDelay: "delay", FaultDuplicate: "duplicate", 0: "unknown"} {
		if k.String() != want {
			t.Errorf("%d: %q", k, k.String())
		}
	}
}

// Rules addressed by actor kind and message name, with a seeded
// probability: the same seed faults the same matches, and the log says
// which.
func TestNamedRulesAndLog(t *testing.T) {
	run := func(seed uint64) []string {
		f := NewFaultInjector()
		f.Add(Rule{Name: "lossy", Kind: FaultDrop, Match: MessageNamed("actors.num"), Actor: "raylet", Count: -1,
			Probability: 0.5, Rand: rand.New(rand.NewPCG(seed, 1))})
		var log []string
		for i := range 200 {
			receiver := "raylet"
			if i%3 == 0 {
				receiver = "gcs/$7"
			}
			f.decide(num(i), receiver)
		}
		for _, e := range f.Log() {
			if e.Actor != "raylet" || e.Rule != "lossy" || e.Kind != FaultDrop {
				t.Fatalf("event %v", e)
			}
			log = append(log, e.String())
		}
		return log
	}
	a, b, c := run(1), run(1), run(2)
	if len(a) < 40 || len(a) > 100 {
		t.Fatalf("%d faults of 133 matches at p=0.5", len(a))
	}
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("same seed, different logs (%d vs %d), or different seeds, same log", len(a), len(b))
	}
	if !MessageNamed("num")(num(1)) || MessageNamed("TaskResult")(num(1)) || !MessageNamed("*")(num(1)) || ActorKind("raylet/$3") != "raylet" {
		t.Fatal("MessageNamed or ActorKind")
	}
}
