package actors

import (
	"math/rand/v2"
	"strings"
)

// Matcher decides whether a fault rule applies to a message (the payload,
// not its envelope). Matchers run under the injector's lock, on the
// receiving actor's goroutine: keep them cheap and free of side effects
// other than their own state.
type Matcher func(msg any) bool

// Any matches every user message.
func Any() Matcher {
	return func(any) bool { return true }
}

// MessageType matches messages whose dynamic type is T, e.g.
// MessageType[*pb.TaskSpec]().
func MessageType[T any]() Matcher {
	return func(msg any) bool {
		_, ok := msg.(T)
		return ok
	}
}

// WithProbability matches the messages that m matches with probability p,
// drawing from rng, which the caller seeds so that a run is reproducible.
// rng is used under the injector's lock: do not use it elsewhere at the same
// time. Messages that m rejects draw nothing from rng.
func WithProbability(m Matcher, p float64, rng *rand.Rand) Matcher {
	return func(msg any) bool {
		return m(msg) && rng.Float64() < p
	}
}

// MessageNamed matches messages whose type is name: a protobuf message's
// full name (atoll.v1.TaskResult) or its last part (TaskResult), or a Go
// type as %T prints it; "*" and "" match every message.
func MessageNamed(name string) Matcher {
	if name == "" || name == "*" {
		return Any()
	}
	return func(msg any) bool {
		full := MessageName(msg)
		if full == name {
			return true
		}
		i := strings.LastIndexByte(full, '.')
		return i >= 0 && full[i+1:] == name
	}
}
