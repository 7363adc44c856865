package actors

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

type (
	boom  struct{ n int }
	ping  struct{}
	pong  struct{}
	spawn struct{ props *actor.Props }
)

// flaky reports its lifecycle on events, panics on boom and answers ping.
type flaky struct {
	events chan<- string
}

func (a *flaky) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.events <- "started"
	case *actor.Stopped:
		a.events <- "stopped"
	case boom:
		panic(fmt.Sprintf("boom %d", m.n))
	case ping:
		c.Respond(pong{})
	}
}

type decision struct {
	reason    any
	restarted bool
	restarts  int
}

// recordDecisions returns an onDecision callback and the channel it feeds.
func recordDecisions() (DecisionFunc, <-chan decision) {
	ch := make(chan decision, 64)
	return func(_ *actor.PID, reason any, restarted bool, restarts int) {
		ch <- decision{reason, restarted, restarts}
	}, ch
}

func TestRestartLimitFromRoot(t *testing.T) {
	system := newTestSystem(t)
	onDecision, decisions := recordDecisions()
	events := make(chan string, 64)
	const maxRestarts = 3
	props := actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} },
		actor.WithGuardian(NewRestartLimitStrategy(maxRestarts, onDecision)))
	pid := system.Root.Spawn(props)
	if got := recv(t, events); got != "started" {
		t.Fatalf("first event %q", got)
	}

	// Fail once per incarnation, waiting for each restart, so that every
	// failure is decided by the strategy (not lost in a stopping mailbox).
	for i := 1; i <= maxRestarts; i++ {
		system.Root.Send(pid, boom{i})
		d := recv(t, decisions)
		if !d.restarted || d.restarts != i || d.reason != fmt.Sprintf("boom %d", i) {
			t.Fatalf("failure %d: decision %+v, want restart #%d", i, d, i)
		}
		if got := recv(t, events); got != "started" {
			t.Fatalf("after failure %d: event %q, want started", i, got)
		}
	}
	// The restarted actor still works.
	if _, ok := result(t, system.Root.RequestFuture(pid, ping{}, waitTimeout)).(pong); !ok {
		t.Fatal("no pong after restarts")
	}

	system.Root.Send(pid, boom{maxRestarts + 1})
	if d := recv(t, decisions); d.restarted || d.restarts != maxRestarts {
		t.Fatalf("last failure: decision %+v, want stop after %d restarts", d, maxRestarts)
	}
	if got := recv(t, events); got != "stopped" {
		t.Fatalf("after the last failure: event %q, want stopped", got)
	}
	expectNone(t, decisions)
	expectNone(t, events)
}

func TestRestartLimitBurstOfFailures(t *testing.T) {
	// Failures queued before any restart: each incarnation takes the next
	// boom, so the child restarts exactly maxRestarts times then stops.
	system := newTestSystem(t)
	onDecision, decisions := recordDecisions()
	events := make(chan string, 64)
	const maxRestarts = 2
	props := actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} },
		actor.WithGuardian(NewRestartLimitStrategy(maxRestarts, onDecision)))
	pid := system.Root.Spawn(props)
	for i := 1; i <= 5; i++ {
		system.Root.Send(pid, boom{i})
	}
	for i := 1; i <= maxRestarts; i++ {
		if d := recv(t, decisions); !d.restarted || d.restarts != i {
			t.Fatalf("decision %d: %+v", i, d)
		}
	}
	if d := recv(t, decisions); d.restarted || d.restarts != maxRestarts {
		t.Fatalf("final decision %+v", d)
	}
	want := []string{"started", "started", "started", "stopped"}
	for i, w := range want {
		if got := recv(t, events); got != w {
			t.Fatalf("event %d: %q, want %q", i, got, w)
		}
	}
	expectNone(t, decisions)
}

// parent spawns children on request with its own props' supervisor and
// forwards their termination to terminated.
type parent struct {
	terminated chan<- *actor.PID
}

func (p *parent) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case spawn:
		child := c.Spawn(m.props)
		c.Watch(child)
		c.Respond(child)
	case *actor.Terminated:
		p.terminated <- m.Who
	}
}

func TestRestartLimitZeroStopsChildOfActor(t *testing.T) {
	system := newTestSystem(t)
	onDecision, decisions := recordDecisions()
	terminated := make(chan *actor.PID, 4)
	parentPID := system.Root.Spawn(actor.PropsFromProducer(
		func() actor.Actor { return &parent{terminated: terminated} },
		actor.WithSupervisor(NewRestartLimitStrategy(0, onDecision))))
	events := make(chan string, 16)
	childProps := actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} })
	child := result(t, system.Root.RequestFuture(parentPID, spawn{childProps}, waitTimeout)).(*actor.PID)
	recv(t, events) // started

	system.Root.Send(child, boom{1})
	if d := recv(t, decisions); d.restarted || d.restarts != 0 {
		t.Fatalf("decision %+v, want stop without restart", d)
	}
	if got := recv(t, terminated); !got.Equal(child) {
		t.Fatalf("terminated %v, want %v", got, child)
	}
	if got := recv(t, events); got != "stopped" {
		t.Fatalf("event %q", got)
	}
	expectNone(t, events)
}

func TestRestartLimitUnlimited(t *testing.T) {
	system := newTestSystem(t)
	onDecision, decisions := recordDecisions()
	events := make(chan string, 64)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} },
		actor.WithGuardian(NewRestartLimitStrategy(Unlimited, onDecision))))
	recv(t, events)
	const failures = 20
	for i := 1; i <= failures; i++ {
		system.Root.Send(pid, boom{i})
		if d := recv(t, decisions); !d.restarted || d.restarts != i {
			t.Fatalf("failure %d: %+v", i, d)
		}
		recv(t, events)
	}
	if _, ok := result(t, system.Root.RequestFuture(pid, ping{}, waitTimeout)).(pong); !ok {
		t.Fatal("no pong")
	}
}

func TestRestartLimitNilCallback(t *testing.T) {
	system := newTestSystem(t)
	events := make(chan string, 8)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} },
		actor.WithGuardian(NewRestartLimitStrategy(1, nil))))
	recv(t, events)
	system.Root.Send(pid, boom{1})
	if got := recv(t, events); got != "started" {
		t.Fatalf("event %q", got)
	}
	system.Root.Send(pid, boom{2})
	if got := recv(t, events); got != "stopped" {
		t.Fatalf("event %q", got)
	}
}

// TestRestartForever: an actor under RestartForever survives any number of
// failures and still answers.
func TestRestartForever(t *testing.T) {
	system := newTestSystem(t)
	events := make(chan string, 64)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &flaky{events: events} },
		RestartForever(slog.New(slog.DiscardHandler), "flaky")))
	recv(t, events)
	for i := 1; i <= 25; i++ { // past protoactor's default of 10 in 10 s
		system.Root.Send(pid, boom{i})
		if got := recv(t, events); got != "started" {
			t.Fatalf("after failure %d: event %q, want started", i, got)
		}
	}
	if _, ok := result(t, system.Root.RequestFuture(pid, ping{}, waitTimeout)).(pong); !ok {
		t.Fatal("no pong after 25 failures")
	}
}
