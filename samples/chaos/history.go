package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll"
)

// The task-result history: rounds of short tasks, each reading a payload
// the driver put (so the plan's fail-creates on the driver's store has
// something to fail), whose submissions and results the driver records
// as they happen. The checker (checkHistory) wants every task's result
// delivered to the driver exactly once, for the task submitted (its id,
// the payload's checksum), and the same value when read again at the end
// of the run: a duplicated or stale result (duplicated TaskResult
// messages, a retry racing a late first attempt) must never surface to
// user code.

const payloadBytes = 256 << 10 // over the inline threshold: a store object

type echoArgs struct {
	ID   int
	Hold time.Duration
}

// echoResult says which execution produced a result.
type echoResult struct {
	ID, Attempt  int
	Worker, Node string
	Sum          uint64
}

var echo = atoll.NewFunc2("chaos.echo", func(ctx context.Context, a echoArgs, payload []byte) (echoResult, error) {
	if err := noteRerun(ctx, "chaos.echo"); err != nil {
		return echoResult{}, err
	}
	t := time.NewTimer(a.Hold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return echoResult{}, ctx.Err()
	}
	return echoResult{ID: a.ID, Attempt: atoll.CurrentAttempt(ctx), Worker: atoll.CurrentWorkerID(ctx), Node: atoll.CurrentNodeID(),
		Sum: byteSum(payload)}, nil
})

func byteSum(b []byte) uint64 {
	var s uint64
	for _, x := range b {
		s = s*31 + uint64(x)
	}
	return s
}

// submission and delivery are the history's events.
type submission struct {
	ID  int
	Ref atoll.ObjectRef[echoResult]
	Sum uint64 // the payload's
}

type delivery struct {
	ID     int // the submission's
	Result echoResult
}

// history is the driver's record.
type history struct {
	subs       []submission
	deliveries []delivery
	// putsRefused counts the payload Puts the store refused
	// (ObjectStoreFull: the plan's fail-creates), each retried.
	putsRefused int
}

// round puts a payload and runs n tasks reading it, recording each
// result as Wait reports it ready.
func (h *history) round(ctx context.Context, k *killer, n int, hold time.Duration) error {
	payload := make([]byte, payloadBytes)
	for i := range payload {
		payload[i] = byte(len(h.subs) + i*7)
	}
	ref, err := h.put(ctx, payload)
	if err != nil {
		return err
	}
	defer ref.Release()
	sum := byteSum(payload)
	pending := make([]atoll.Ref, 0, n)
	byRef := map[string]int{} // ref id -> submission index
	for range n {
		id := len(h.subs)
		r := echo.Remote(ctx, atoll.Value(echoArgs{ID: id, Hold: hold}), ref, append(k.taskOptions(), atoll.Spread())...)
		h.subs = append(h.subs, submission{ID: id, Ref: r, Sum: sum})
		byRef[r.ID()] = id
		pending = append(pending, r)
		k.track(r)
	}
	for len(pending) > 0 {
		ready, rest, err := atoll.Wait(ctx, pending)
		if err != nil {
			return err
		}
		for _, r := range ready {
			s := h.subs[byRef[r.ID()]]
			res, err := atoll.Get(ctx, s.Ref)
			if err != nil {
				return fmt.Errorf("history: task %d: %w", s.ID, err)
			}
			h.deliveries = append(h.deliveries, delivery{ID: s.ID, Result: res})
		}
		pending = rest
	}
	return nil
}

// put puts the payload, again after each refusal of a full store.
func (h *history) put(ctx context.Context, payload []byte) (atoll.ObjectRef[[]byte], error) {
	for {
		ref, err := atoll.Put(ctx, payload)
		if err == nil || !errors.Is(err, atoll.ErrObjectStoreFull) {
			return ref, err
		}
		h.putsRefused++
		select {
		case <-ctx.Done():
			return ref, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// historyReport is what checkHistory found.
type historyReport struct {
	Tasks, Delivered, Retried int
	PutsRefused               int
	Verified                  error // nil: every result delivered exactly once, right and stable
}

// check reads every result again and checks the history.
func (h *history) check(ctx context.Context) historyReport {
	again := make([]echoResult, len(h.subs))
	var readErr error
	for i, s := range h.subs {
		r, err := atoll.Get(ctx, s.Ref)
		if err != nil && readErr == nil {
			readErr = fmt.Errorf("task %d read again: %w", s.ID, err)
		}
		again[i] = r
	}
	rep := checkHistory(h.subs, h.deliveries, again)
	rep.PutsRefused = h.putsRefused
	if rep.Verified == nil {
		rep.Verified = readErr
	}
	return rep
}

// checkHistory is the checker; again[i] is submission i's result read
// at the end.
func checkHistory(subs []submission, deliveries []delivery, again []echoResult) historyReport {
	rep := historyReport{Tasks: len(subs), Delivered: len(deliveries)}
	fail := func(format string, args ...any) {
		if rep.Verified == nil {
			rep.Verified = fmt.Errorf(format, args...)
		}
	}
	first := make([]*echoResult, len(subs))
	for i := range deliveries {
		d := &deliveries[i]
		switch {
		case d.ID < 0 || d.ID >= len(subs):
			fail("a result for task %d, never submitted", d.ID)
			continue
		case first[d.ID] != nil:
			fail("task %d's result delivered twice: %+v, then %+v", d.ID, *first[d.ID], d.Result)
			continue
		}
		first[d.ID] = &d.Result
		if d.Result.ID != d.ID || d.Result.Sum != subs[d.ID].Sum {
			fail("task %d got the result %+v (want its id and payload sum %x)", d.ID, d.Result, subs[d.ID].Sum)
		}
		if d.Result.Attempt > 0 {
			rep.Retried++
		}
	}
	for i := range subs {
		switch {
		case first[i] == nil:
			fail("task %d's result never delivered", i)
		case again[i] != *first[i]:
			fail("task %d's result changed: %+v when delivered, %+v at the end", i, *first[i], again[i])
		}
	}
	return rep
}
