package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
)

// killer kills the worker of a running workload task every so often, as
// a crashing process would (atolltest.KillTaskWorker): the workloads track
// the refs of their tasks, and at each firing the killer picks one whose
// task has not finished, with a generator seeded from the plan's seed
// (a firing with none waits for one, checking every pruneEvery).
// The faultplan package has no worker kills (its timed rules act on
// stores and nodes), so the driver does this itself. A task still queued
// when picked is not running: the kill does nothing (KillTaskWorker's
// contract), and the firing still counts as requested.
type killer struct {
	every   time.Duration
	retries int // MaxRetries of every workload task

	mu    sync.Mutex
	rng   *rand.Rand
	refs  []atoll.Ref
	kills int // requested
	errs  int // KillTaskWorker failures
}

// pruneEvery is how often the killer drops the refs of finished tasks.
const pruneEvery = 250 * time.Millisecond

func newKiller(seed uint64, every time.Duration, retries int) *killer {
	return &killer{every: every, retries: retries, rng: rand.New(rand.NewPCG(seed, 0x6b111))}
}

// taskOptions are the options of every workload task.
func (k *killer) taskOptions() []atoll.TaskOption {
	return []atoll.TaskOption{atoll.MaxRetries(k.retries)}
}

// track makes the tasks producing refs candidates.
func (k *killer) track(refs ...atoll.Ref) {
	k.mu.Lock()
	k.refs = append(k.refs, refs...)
	k.mu.Unlock()
}

// run fires every k.every until ctx ends (never if every is 0).
func (k *killer) run(ctx context.Context) {
	if k.every <= 0 {
		return
	}
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	fire := time.NewTicker(k.every)
	defer fire.Stop()
	due := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			victim := k.prune(ctx)
			if due && victim != nil {
				due = false
				k.kill(ctx, victim)
			}
		case <-fire.C:
			// A firing with no unfinished task waits for one.
			due = true
		}
	}
}

// kill kills victim's worker.
func (k *killer) kill(ctx context.Context, victim atoll.Ref) {
	err := atolltest.KillTaskWorker(ctx, victim)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kills++
	if err != nil {
		k.errs++
	}
}

// prune drops the refs whose tasks finished and returns one of the
// others at random (nil if none).
func (k *killer) prune(ctx context.Context) atoll.Ref {
	k.mu.Lock()
	refs := k.refs
	k.refs = nil
	k.mu.Unlock()
	if len(refs) == 0 {
		return nil
	}
	poll, stop := context.WithDeadline(ctx, time.Time{})
	_, running, err := atoll.Wait(poll, refs, atoll.NumReady(len(refs)), atoll.FetchLocal(false))
	stop()
	if err != nil {
		running = refs
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refs = append(running, k.refs...)
	if len(running) == 0 {
		return nil
	}
	return running[k.rng.IntN(len(running))]
}

// requested returns the kills requested and how many failed.
func (k *killer) requested() (kills, failed int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kills, k.errs
}
