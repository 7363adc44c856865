package actors

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// FaultKind is what a fault rule does to the messages it matches.
type FaultKind int

// The kinds of fault a FaultInjector applies.
const (
	FaultDrop      FaultKind = iota + 1 // the message is discarded
	FaultDelay                          // the message is delivered later
	FaultDuplicate                      // the message is delivered twice
	// Faults at points of a node's work rather than on messages (package
	// faultplan), recorded with FaultInjector.Record.
	FaultKillWorker // a worker process SIGKILLed at a point of a task
	FaultSpillFull  // a spill write failed as if the disk were full
	FaultSpillSlow  // a spill write or restore read delayed
	// FaultPanic makes the receiving actor fail on the message (it
	// panics), as a bug would: its guardian decides what follows.
	FaultPanic
)

// String returns "drop", "delay", "duplicate", "kill-worker", "spill-full",
// "spill-slow" or "panic".
func (k FaultKind) String() string {
	switch k {
	case FaultDrop:
		return "drop"
	case FaultDelay:
		return "delay"
	case FaultDuplicate:
		return "duplicate"
	case FaultKillWorker:
		return "kill-worker"
	case FaultSpillFull:
		return "spill-full"
	case FaultSpillSlow:
		return "spill-slow"
	case FaultPanic:
		return "panic"
	}
	return "unknown"
}

// RuleID names a rule of a FaultInjector, for Remove.
type RuleID uint64

// Stats counts the faults a FaultInjector has injected.
type Stats struct {
	Dropped    uint64 // messages discarded
	Delayed    uint64 // messages re-delivered after a delay
	Duplicated uint64 // messages delivered a second time
	// Recorded counts the faults at points (Record): workers killed,
	// spill writes failed or delayed.
	Recorded uint64
}

// FaultInjector drops, delays and duplicates messages received by the actors
// whose props carry its ReceiverMiddleware. Rules are added and removed at
// run time and are deterministic: each rule applies to the first n messages
// it matches (n < 0: all of them), and randomness enters only through a
// matcher the caller builds with WithProbability and a seeded generator.
//
// Rules are tried in the order they were added; the first one that matches a
// message applies to it and the others are not consulted, so a message
// suffers at most one fault. A rule is removed once it has applied n times.
// Lifecycle and system messages (Started, Stopping, Restarting, Terminated,
// ReceiveTimeout, ...) are never faulted.
//
// Delivery details:
//   - Drop: the actor never sees the message; a requester times out.
//   - Delay: the message is taken out of the mailbox and sent back to the
//     actor after d (with time.AfterFunc), so the actor keeps processing
//     other messages meanwhile. The re-delivered message keeps its sender and
//     headers, so Respond still reaches the requester. Ordering consequence:
//     it re-enters at the tail of the mailbox, after every message sent
//     during the delay; messages from one sender are then no longer
//     processed in send order. If the actor has stopped by then, the message
//     goes to dead letters.
//   - Duplicate: the message is processed now and a copy, with the same
//     sender and headers, is appended to the tail of the mailbox.
//
// Re-delivered and duplicated copies pass through the injector unfaulted and
// count against no rule. Removing rules (Remove, Clear) does not cancel
// delayed messages already in flight.
//
// The zero value is ready to use; a FaultInjector is safe for concurrent use
// and one injector may serve many actors.
type FaultInjector struct {
	mu     sync.Mutex
	rules  []*rule
	lastID RuleID
	stats  Stats
	log    faultLog
	// onFault, if set (OnFault), is told of every message fault.
	onFault func(FaultEvent, any)
}

// OnFault sets fn to be called, on the receiving actor's goroutine and
// outside the injector's lock, with every message fault and its message
// (a node records a span event on the faulted task's trace with it). fn
// must not block.
func (f *FaultInjector) OnFault(fn func(e FaultEvent, msg any)) {
	f.mu.Lock()
	f.onFault = fn
	f.mu.Unlock()
}

type rule struct {
	id        RuleID
	name      string
	kind      FaultKind
	match     Matcher
	actor     string // receiving actor's kind; "" any
	delay     time.Duration
	remaining int        // < 0: unlimited
	prob      float64    // of faulting a matched message; 0: always
	rng       *rand.Rand // draws for prob, under the injector's lock
	matched   uint64
}

// redelivery wraps a message that the injector sent back to the actor
// (delayed or duplicated) so that the injector lets it through.
type redelivery struct {
	injector *FaultInjector
	msg      any
}

// NewFaultInjector returns an injector with no rules.
func NewFaultInjector() *FaultInjector {
	return &FaultInjector{}
}

// Drop discards the first n messages that match (n < 0: every one).
func (f *FaultInjector) Drop(match Matcher, n int) RuleID {
	return f.add(FaultDrop, match, 0, n)
}

// Delay delivers the first n messages that match (n < 0: every one) d later,
// at the tail of the mailbox; see FaultInjector for the ordering consequence.
func (f *FaultInjector) Delay(match Matcher, d time.Duration, n int) RuleID {
	return f.add(FaultDelay, match, d, n)
}

// Duplicate delivers the first n messages that match (n < 0: every one)
// twice.
func (f *FaultInjector) Duplicate(match Matcher, n int) RuleID {
	return f.add(FaultDuplicate, match, 0, n)
}

// Panic makes the receiving actor fail (panic) on the first n messages
// that match (n < 0: every one), as a bug in it would; its guardian then
// restarts or stops it.
func (f *FaultInjector) Panic(match Matcher, n int) RuleID {
	return f.add(FaultPanic, match, 0, n)
}

func (f *FaultInjector) add(kind FaultKind, match Matcher, d time.Duration, n int) RuleID {
	return f.Add(Rule{Kind: kind, Match: match, Delay: d, Count: n})
}

// Rule is a fault rule in full, for Add.
type Rule struct {
	// Name names the rule in the fault log; default the kind.
	Name string
	Kind FaultKind
	// Match selects the messages; nil matches every one.
	Match Matcher
	// Actor, if set, restricts the rule to messages received by actors
	// of that kind: the first segment of the PID's id ("raylet", "gcs",
	// "objectstore", "gateway", "owner", "amm", ...).
	Actor string
	// Delay is how late FaultDelay delivers.
	Delay time.Duration
	// Count is how many messages the rule applies to; < 0 every one, 0
	// none (the rule is not added).
	Count int
	// Probability, if in (0, 1), faults each matched message with that
	// probability, drawing from Rand (seeded by the caller, so that a
	// run replays; used only under the injector's lock). A message not
	// faulted still counts as matched (FaultEvent.Match).
	Probability float64
	Rand        *rand.Rand
}

// Add adds a rule and returns its id.
func (f *FaultInjector) Add(r Rule) RuleID {
	if r.Match == nil {
		r.Match = Any()
	}
	if r.Name == "" {
		r.Name = r.Kind.String()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastID++
	if r.Count != 0 {
		nr := &rule{id: f.lastID, name: r.Name, kind: r.Kind, match: r.Match, actor: r.Actor, delay: r.Delay, remaining: r.Count}
		if r.Probability > 0 && r.Probability < 1 && r.Rand != nil {
			nr.prob, nr.rng = r.Probability, r.Rand
		}
		f.rules = append(f.rules, nr)
	}
	return f.lastID
}

// Remove deletes a rule and reports whether it was still active (a rule
// that has applied its n times is already gone).
func (f *FaultInjector) Remove(id RuleID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.id == id {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			return true
		}
	}
	return false
}

// Clear deletes every rule. Counters are kept.
func (f *FaultInjector) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Stats returns the number of faults injected so far.
func (f *FaultInjector) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// decide returns the fault to apply to msg, received by the actor whose
// PID id is receiver, consuming one use of the rule that applies, or ok
// == false when no rule matches.
func (f *FaultInjector) decide(msg any, receiver string) (kind FaultKind, delay time.Duration, ok bool) {
	var e FaultEvent
	var hook func(FaultEvent, any)
	defer func() {
		if ok && hook != nil {
			hook(e, msg)
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	hook = f.onFault
	for i, r := range f.rules {
		if r.actor != "" && ActorKind(receiver) != r.actor {
			continue
		}
		if !r.match(msg) {
			continue
		}
		r.matched++
		if r.rng != nil && r.rng.Float64() >= r.prob {
			continue
		}
		e = FaultEvent{Rule: r.name, Kind: r.kind, Message: MessageName(msg), Actor: ActorKind(receiver), Match: r.matched}
		f.log.add(e)
		e.Seq = f.log.seq
		if r.remaining > 0 {
			r.remaining--
			if r.remaining == 0 {
				f.rules = append(f.rules[:i], f.rules[i+1:]...)
			}
		}
		switch r.kind {
		case FaultDrop:
			f.stats.Dropped++
		case FaultDelay:
			f.stats.Delayed++
		case FaultDuplicate:
			f.stats.Duplicated++
		}
		return r.kind, r.delay, true
	}
	return 0, 0, false
}

// ReceiverMiddleware returns the middleware that applies the injector's
// rules; install it with actor.WithReceiverMiddleware. Put it first in the
// chain so that later middleware (tracing, metrics) sees what the actor sees.
func (f *FaultInjector) ReceiverMiddleware() actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if rd, ok := env.Message.(*redelivery); ok && rd.injector == f {
				next(c, &actor.MessageEnvelope{Header: env.Header, Message: rd.msg, Sender: env.Sender})
				return
			}
			if !faultable(env.Message) {
				next(c, env)
				return
			}
			kind, delay, ok := f.decide(env.Message, c.Self().GetId())
			if !ok {
				next(c, env)
				return
			}
			switch kind {
			case FaultDrop:
			case FaultDelay:
				system, self, again := c.ActorSystem(), c.Self(), f.wrap(env)
				time.AfterFunc(delay, func() { system.Root.Send(self, again) })
			case FaultDuplicate:
				c.ActorSystem().Root.Send(c.Self(), f.wrap(env))
				next(c, env)
			case FaultPanic:
				panic(fmt.Sprintf("fault injection: %s failed on a %T", c.Self().GetId(), env.Message))
			}
		}
	}
}

// wrap returns a copy of env whose message the injector will let through.
func (f *FaultInjector) wrap(env *actor.MessageEnvelope) *actor.MessageEnvelope {
	return &actor.MessageEnvelope{
		Header:  env.Header,
		Message: &redelivery{injector: f, msg: env.Message},
		Sender:  env.Sender,
	}
}

// faultable reports whether msg is a user message (not a lifecycle or
// system message of protoactor).
func faultable(msg any) bool {
	switch msg.(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage, actor.InfrastructureMessage, *actor.ReceiveTimeout:
		return false
	}
	return true
}
