package util

import (
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Errors. The queue's and the pool's conditions are sentinels for
// errors.Is, made in the process that calls the Queue or the ActorPool. A
// task or an actor method that returns one (wrapped or not) hands it to
// its caller too: errors.Is finds it there through the task's
// atoll.TaskError, as it finds the sentinels registered with
// atoll.RegisterError.

// ErrQueueFull is what TryPut returns when the queue holds MaxSize
// items: Put waits for room instead. A Put whose context ends while the
// queue stays full returns an error matching both ErrQueueFull and the
// context's error.
var ErrQueueFull = errors.New("util: queue is full (TryPut does not wait: use Put to wait for room, or a larger maxSize)")

// ErrQueueEmpty is what TryGet returns when the queue holds nothing: Get
// waits for an item instead. A Get whose context ends while the queue
// stays empty returns an error matching both ErrQueueEmpty and the
// context's error.
var ErrQueueEmpty = errors.New("util: queue is empty (TryGet does not wait: use Get to wait for an item)")

// ErrNoPending is what GetNext and GetNextUnordered return when the pool
// has no submitted work left to return: check HasNext first. It matches
// atoll.ErrInvalidArgument.
var ErrNoPending = fmt.Errorf("%w: the actor pool has no pending results (Submit work first; HasNext says whether a result is left)", atoll.ErrInvalidArgument)

// ErrNoActors is what GetNext and GetNextUnordered return when the next
// result belongs to work no actor can run: every actor was taken out of
// the pool (PopIdle) while work waited for one. Push an actor back. It
// matches atoll.ErrInvalidArgument.
var ErrNoActors = fmt.Errorf("%w: the actor pool has work waiting for an actor but no actor (Push one)", atoll.ErrInvalidArgument)

// The sentinels travel inside task errors.
func init() {
	for _, s := range []error{ErrQueueFull, ErrQueueEmpty, ErrNoPending, ErrNoActors} {
		if err := errs.RegisterSentinel(s); err != nil {
			panic(err)
		}
	}
}
