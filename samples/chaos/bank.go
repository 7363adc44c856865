package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll"
)

// The bank workload: accounts held by branch actors pinned to the head
// (which no plan kills), money moved by transfers that the driver and
// tasks send as actor calls. Each call carries its caller and a sequence
// number; the branch applies it (or rejects it for want of funds, which
// moves nothing) and appends it to its journal. A caller is one
// execution: the driver, or one attempt of a task (a retried task is a
// new caller that sends its transfers again, as Ray's retries do).
//
// The checks (checkBank):
//   - conservation: the balances of every branch sum to the initial
//     total, none is negative, and replaying each branch's journal from
//     the initial balances gives its final balances;
//   - per caller and branch, the sequence numbers applied are 1, 2, ...,
//     k in that order: calls applied in order, each at most once, none
//     skipped; k is every call the caller sent when it finished (the
//     driver; a task attempt whose result arrived), at most that when it
//     was killed midway;
//   - every applied call is the transfer its caller sent (its accounts
//     and amount are regenerated from the caller's seed).

const (
	bankBranches    = 2
	bankAccounts    = 16 // per branch
	bankInitial     = 1000
	bankTransferMax = 50
)

// transfer is one call to a branch.
type transfer struct {
	Caller   string // "driver", or "t<task>.a<attempt>"
	Seq      int    // from 1, per caller and branch
	From, To int    // accounts of the branch; From == -1: a deposit, To == -1: a withdrawal
	Amount   int64
}

// applied is a journal entry: the transfer and whether it moved money.
type applied struct {
	T  transfer
	OK bool
}

type branch struct {
	balances []int64
	journal  []applied
}

var (
	branchType = atoll.NewActorType("chaos.branch", func(context.Context) (*branch, error) {
		b := &branch{balances: make([]int64, bankAccounts)}
		for i := range b.balances {
			b.balances[i] = bankInitial
		}
		return b, nil
	})
	// branchApply moves money within the branch, into it (a deposit) or
	// out of it (a withdrawal, refused without the funds).
	branchApply = atoll.NewMethod1(branchType, "Apply", func(b *branch, _ context.Context, t transfer) (bool, error) {
		ok := t.From < 0 || b.balances[t.From] >= t.Amount
		if ok {
			if t.From >= 0 {
				b.balances[t.From] -= t.Amount
			}
			if t.To >= 0 {
				b.balances[t.To] += t.Amount
			}
		}
		b.journal = append(b.journal, applied{T: t, OK: ok})
		return ok, nil
	})
	branchState = atoll.NewMethod0(branchType, "State", func(b *branch, _ context.Context) (branchReport, error) {
		return branchReport{Balances: slices.Clone(b.balances), Journal: slices.Clone(b.journal)}, nil
	})
	// bankTask sends its transfers to the branches, pipelined (all sent
	// before any result is awaited), and returns how many it sent to each.
	bankTask = atoll.NewFunc1("chaos.bankTask", func(ctx context.Context, a bankTaskArgs) (bankTaskResult, error) {
		if err := noteRerun(ctx, "chaos.bankTask"); err != nil {
			return bankTaskResult{}, err
		}
		hs := make([]atoll.ActorHandle[*branch], bankBranches)
		for i := range hs {
			h, err := atoll.GetActor[*branch](ctx, branchName(a.Run, i))
			if err != nil {
				return bankTaskResult{}, err
			}
			hs[i] = h
		}
		res := bankTaskResult{Caller: taskCaller(a.ID, atoll.CurrentAttempt(ctx)), Sent: make([]int, bankBranches)}
		refs := make([]atoll.ObjectRef[bool], 0, a.Transfers)
		for _, c := range callerTransfers(a.ID, a.Transfers) {
			res.Sent[c.branch]++
			c.t.Caller, c.t.Seq = res.Caller, res.Sent[c.branch]
			refs = append(refs, branchApply.Remote(ctx, hs[c.branch], atoll.Value(c.t)))
		}
		if _, err := atoll.GetAll(ctx, refs); err != nil {
			return bankTaskResult{}, err
		}
		return res, nil
	})
)

type branchReport struct {
	Balances []int64
	Journal  []applied
}

type bankTaskArgs struct {
	Run       string // names the run's branches
	ID        int
	Transfers int
}

type bankTaskResult struct {
	Caller string
	Sent   []int // per branch
}

func branchName(run string, i int) string { return fmt.Sprintf("chaos-%s-branch-%d", run, i) }

func taskCaller(id, attempt int) string { return fmt.Sprintf("t%d.a%d", id, attempt) }

// call is a transfer bound for a branch.
type call struct {
	branch int
	t      transfer
}

// callerTransfers is task id's list of transfers: the same for every
// attempt, so the checker can tell what each call should have carried.
func callerTransfers(id, n int) []call {
	r := rand.New(rand.NewPCG(uint64(id), 0xba9c))
	out := make([]call, n)
	for i := range out {
		from := r.IntN(bankAccounts)
		out[i] = call{branch: r.IntN(bankBranches),
			t: transfer{From: from, To: (from + 1 + r.IntN(bankAccounts-1)) % bankAccounts, Amount: 1 + r.Int64N(bankTransferMax)}}
	}
	return out
}

// bank is the driver's side of the workload.
type bank struct {
	branches []atoll.ActorHandle[*branch]
	run      string
	rng      *rand.Rand
	// sent counts the driver's calls per branch; tasks maps a task id to
	// its transfer count, and finished the callers whose task returned.
	sent     []int
	tasks    map[int]int
	finished map[string]bankTaskResult
	nextTask int
	rounds   int
}

// newBank creates the branches on the head and waits until they answer.
func newBank(ctx context.Context, run, head string, seed uint64) (*bank, error) {
	b := &bank{run: run, rng: rand.New(rand.NewPCG(seed, 0xba9c)), sent: make([]int, bankBranches),
		tasks: map[int]int{}, finished: map[string]bankTaskResult{}}
	for i := range bankBranches {
		h, err := branchType.New(ctx, atoll.ActorName(branchName(run, i)), atoll.OnNode(head, false))
		if err != nil {
			return nil, err
		}
		b.branches = append(b.branches, h)
	}
	for _, h := range b.branches {
		if _, err := atoll.Get(ctx, branchState.Remote(ctx, h)); err != nil {
			return nil, fmt.Errorf("bank: branch: %w", err)
		}
	}
	return b, nil
}

// round runs the driver's transfers (pipelined within a branch, and
// withdraw-then-deposit moves between branches) while tasks send theirs.
func (b *bank) round(ctx context.Context, k *killer, tasks, perTask, driverCalls int) error {
	b.rounds++
	refs := make([]atoll.ObjectRef[bankTaskResult], tasks)
	for i := range refs {
		id := b.nextTask
		b.nextTask++
		b.tasks[id] = perTask
		refs[i] = bankTask.Remote(ctx, atoll.Value(bankTaskArgs{Run: b.run, ID: id, Transfers: perTask}),
			append(k.taskOptions(), atoll.Spread())...)
		k.track(refs[i])
	}
	var calls []atoll.ObjectRef[bool]
	for range driverCalls {
		br := b.rng.IntN(bankBranches)
		from := b.rng.IntN(bankAccounts)
		t := transfer{From: from, To: (from + 1 + b.rng.IntN(bankAccounts-1)) % bankAccounts, Amount: 1 + b.rng.Int64N(bankTransferMax)}
		calls = append(calls, b.apply(ctx, br, t))
	}
	if _, err := atoll.GetAll(ctx, calls); err != nil {
		return fmt.Errorf("bank: driver transfers: %w", err)
	}
	// One move between branches: withdraw, then deposit what was taken.
	from := b.rng.IntN(bankBranches)
	to := (from + 1) % bankBranches
	amount := 1 + b.rng.Int64N(bankTransferMax)
	ok, err := atoll.Get(ctx, b.apply(ctx, from, transfer{From: b.rng.IntN(bankAccounts), To: -1, Amount: amount}))
	if err != nil {
		return fmt.Errorf("bank: withdrawal: %w", err)
	}
	if ok {
		if _, err := atoll.Get(ctx, b.apply(ctx, to, transfer{From: -1, To: b.rng.IntN(bankAccounts), Amount: amount})); err != nil {
			return fmt.Errorf("bank: deposit: %w", err)
		}
	}
	results, err := atoll.GetAll(ctx, refs)
	if err != nil {
		return fmt.Errorf("bank: transfer tasks: %w", err)
	}
	for _, r := range results {
		b.finished[r.Caller] = r
	}
	return nil
}

// apply sends the driver's next call to branch br.
func (b *bank) apply(ctx context.Context, br int, t transfer) atoll.ObjectRef[bool] {
	b.sent[br]++
	t.Caller, t.Seq = "driver", b.sent[br]
	return branchApply.Remote(ctx, b.branches[br], atoll.Value(t))
}

// bankReport is what checkBank found.
type bankReport struct {
	Rounds, Tasks int
	// Applied counts the calls the branches applied, Callers the
	// executions that sent them, Retried the task ids with more than one.
	Applied, Callers, Retried int
	Total                     int64
	Conservation, Order       error // nil: the check passed
}

// check reads every branch's state and checks it.
func (b *bank) check(ctx context.Context) (bankReport, error) {
	deadline, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var states []branchReport
	for i, h := range b.branches {
		s, err := atoll.Get(deadline, branchState.Remote(deadline, h))
		if err != nil {
			return bankReport{}, fmt.Errorf("bank: branch %d: %w", i, err)
		}
		states = append(states, s)
	}
	return checkBank(states, b.sent, b.tasks, b.finished, b.rounds), nil
}

// checkBank is the bank's history checker (see the top of this file).
func checkBank(states []branchReport, driverSent []int, tasks map[int]int, finished map[string]bankTaskResult, rounds int) bankReport {
	rep := bankReport{Rounds: rounds, Tasks: len(tasks)}
	fail := func(dst *error, format string, args ...any) {
		if *dst == nil {
			*dst = fmt.Errorf(format, args...)
		}
	}
	callers := map[string]bool{}
	attempts := map[int]map[int]bool{}
	for bi, s := range states {
		replay := make([]int64, bankAccounts)
		for i := range replay {
			replay[i] = bankInitial
		}
		next := map[string]int{} // caller -> next sequence number expected
		for _, a := range s.Journal {
			t := a.T
			rep.Applied++
			callers[t.Caller] = true
			if next[t.Caller] == 0 {
				next[t.Caller] = 1
			}
			if t.Seq != next[t.Caller] {
				fail(&rep.Order, "branch %d: caller %s's call %d applied after its call %d (want %d next: out of order, twice or skipped)",
					bi, t.Caller, t.Seq, next[t.Caller]-1, next[t.Caller])
			}
			next[t.Caller] = t.Seq + 1
			if want, ok := expectedTransfer(t.Caller, bi, t.Seq, tasks); ok && (want.From != t.From || want.To != t.To || want.Amount != t.Amount) {
				fail(&rep.Order, "branch %d: caller %s's call %d carried %+v, it sent %+v", bi, t.Caller, t.Seq, t, want)
			}
			if id, attempt, ok := parseCaller(t.Caller); ok {
				if attempts[id] == nil {
					attempts[id] = map[int]bool{}
				}
				attempts[id][attempt] = true
			}
			ok := t.From < 0 || replay[t.From] >= t.Amount
			if ok != a.OK {
				fail(&rep.Conservation, "branch %d: caller %s's call %d: replay says applied=%v, the branch %v", bi, t.Caller, t.Seq, ok, a.OK)
			}
			if ok {
				if t.From >= 0 {
					replay[t.From] -= t.Amount
				}
				if t.To >= 0 {
					replay[t.To] += t.Amount
				}
			}
		}
		if !slices.Equal(replay, s.Balances) {
			fail(&rep.Conservation, "branch %d: balances %v, its journal replayed gives %v", bi, s.Balances, replay)
		}
		for i, v := range s.Balances {
			rep.Total += v
			if v < 0 {
				fail(&rep.Conservation, "branch %d: account %d holds %d", bi, i, v)
			}
		}
		// Callers that finished had every call applied.
		if got := max(next["driver"]-1, 0); got != driverSent[bi] {
			fail(&rep.Order, "branch %d: %d of the driver's %d calls applied", bi, got, driverSent[bi])
		}
		for caller, r := range finished {
			if got := max(next[caller]-1, 0); got != r.Sent[bi] {
				fail(&rep.Order, "branch %d: %d of finished caller %s's %d calls applied", bi, got, caller, r.Sent[bi])
			}
		}
	}
	if want := int64(bankBranches * bankAccounts * bankInitial); rep.Total != want {
		fail(&rep.Conservation, "the branches hold %d in all, %d at the start", rep.Total, want)
	}
	rep.Callers = len(callers)
	for _, a := range attempts {
		if len(a) > 1 {
			rep.Retried++
		}
	}
	return rep
}

// expectedTransfer is what caller's call seq to branch bi carried, if
// the caller is a task (the driver's transfers are not regenerated).
func expectedTransfer(caller string, bi, seq int, tasks map[int]int) (transfer, bool) {
	id, _, ok := parseCaller(caller)
	if !ok {
		return transfer{}, false
	}
	n := 0
	for _, c := range callerTransfers(id, tasks[id]) {
		if c.branch == bi {
			n++
			if n == seq {
				return c.t, true
			}
		}
	}
	return transfer{From: -2}, true // a call the caller never sent
}

func parseCaller(caller string) (id, attempt int, ok bool) {
	_, err := fmt.Sscanf(caller, "t%d.a%d", &id, &attempt)
	return id, attempt, err == nil
}
