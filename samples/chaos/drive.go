package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/localcluster"
)

// drive joins the cluster as the driver with the plan, runs the
// workloads and the checks, and shuts the driver down.
func drive(ctx context.Context, opts options, p *faultplan.Plan, c *localcluster.Cluster, progress *benchfmt.Progress) (*outcome, error) {
	var sayMu sync.Mutex // the sort's goroutine reports too
	say := func(format string, args ...any) {
		sayMu.Lock()
		defer sayMu.Unlock()
		progress.Phase(fmt.Sprintf(format, args...))
	}
	if err := atoll.Init(ctx, atoll.WithAddress(c.Address), atoll.WithSecret(c.Secret), atoll.WithFaultPlan(p),
		atoll.WithObjectStoreMemory(uint64(opts.driverStore)), atoll.WithFailureTimeout(opts.failureTimeout)); err != nil {
		return nil, err
	}
	shut := false
	defer func() {
		if !shut {
			_ = atoll.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	start := time.Now()
	o := &outcome{}
	b, err := newBank(ctx, fmt.Sprint(time.Now().UnixNano()), c.Nodes[0], p.Seed)
	if err != nil {
		return nil, err
	}
	rr, err := newReruns(ctx, c.Nodes[0])
	if err != nil {
		return nil, err
	}
	k := newKiller(p.Seed, opts.killEvery, opts.retries)
	ft := newFaultTally()
	kctx, stopKiller := context.WithCancel(ctx)
	var kwg sync.WaitGroup
	kwg.Go(func() { k.run(kctx) })
	kwg.Go(func() { ft.run(kctx) })
	defer func() { stopKiller(); kwg.Wait() }()

	say("workloads: sort %s in %d partitions; rounds of %d recorded tasks, %d transfer tasks x %d and %d driver transfers, for %v",
		benchfmt.FormatSize(int64(opts.sortSize)), opts.partitions, opts.echoTasks, opts.bankTasks, opts.bankTransfers, opts.driverCalls, opts.duration)
	// Workloads that hang (a lost message nothing retries) fail at
	// -max-duration instead.
	wctx, cancelWorkloads := context.WithTimeout(ctx, opts.maxDuration)
	defer cancelWorkloads()
	var sortErr error
	sortDone := make(chan struct{})
	go func() {
		defer close(sortDone)
		o.sort, sortErr = runSort(wctx, k, int64(opts.sortSize), opts.partitions, say)
	}()
	h := &history{}
	var histErr, bankErr error
	firings := timedFirings(p)
	rounds, firedBy := 0, -1 // firedBy: the rounds done when every timed rule had fired
	for {
		log, _ := atolltest.GetFaultLog(ctx)
		sortFinished := false
		select {
		case <-sortDone:
			sortFinished = true
		default:
		}
		if firedBy < 0 && len(log.Timed) >= firings {
			firedBy = rounds
		}
		// Stop after -duration once the sort is done and a round ran
		// after the last timed fault (a failed creation meets a put).
		elapsed := time.Since(start)
		if elapsed >= opts.maxDuration || (elapsed >= opts.duration && sortFinished && firedBy >= 0 && rounds > firedBy) {
			break
		}
		if histErr == nil {
			histErr = h.round(wctx, k, opts.echoTasks, opts.echoHold)
		}
		if bankErr == nil {
			bankErr = b.round(wctx, k, opts.bankTasks, opts.bankTransfers, opts.driverCalls)
		}
		rounds++
		if rounds%10 == 0 {
			say("%d rounds: %d recorded tasks, %d bank calls sent by the driver, %d timed faults so far", rounds, len(h.subs), sum(b.sent), len(log.Timed))
		}
		if histErr != nil && bankErr != nil {
			<-sortDone
			break
		}
	}
	<-sortDone
	stopKiller()
	kwg.Wait()
	o.kills, o.killErrs = k.requested()
	o.log, _ = atolltest.GetFaultLog(ctx)
	if err := ft.poll(ctx); err != nil { // the last reading
		return nil, fmt.Errorf("fault log: %w", err)
	}
	o.faults, o.notes = tallyFaults(p, o.log, ft, o.kills, o.killErrs)
	say("checking: %d rounds, %d timed faults of %d planned", rounds, len(o.log.Timed), firings)

	o.judge(ctx, opts, c, h, b, sortErr, histErr, bankErr, firings)
	if o.reruns, err = atoll.Get(ctx, rerunsList.Remote(ctx, rr)); err != nil {
		return nil, fmt.Errorf("reruns: %w", err)
	}
	o.wall = time.Since(start)
	shut = true
	if err := atoll.Shutdown(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return o, nil
}

// judge runs the checkers, the stores' last, and records their verdicts.
func (o *outcome) judge(ctx context.Context, opts options, c *localcluster.Cluster, h *history, b *bank, sortErr, histErr, bankErr error, firings int) {
	o.hist = h.check(ctx)
	if histErr != nil {
		o.hist.Verified = histErr
	}
	bankRep, err := b.check(ctx)
	if err != nil {
		bankRep.Conservation, bankRep.Order = err, err
	}
	if bankErr != nil {
		bankRep.Order = bankErr
	}
	o.bank = bankRep
	if sortErr == nil {
		sortErr = o.sort.Verified
	}
	if m, err := atolltest.Memory(ctx); err == nil {
		o.reconstructed = m.Reconstructions
	}
	// Drop every ref the driver holds, then wait for the stores to empty.
	for i := range h.subs {
		h.subs[i].Ref.Release()
	}
	var victims []string
	for _, e := range o.log.Timed {
		// A node cut off past the failure timeout is declared dead too
		// (and exits once healed).
		if (e.Action == faultplan.KillNode || e.Action == faultplan.Partition) && e.Victim != "" && e.Err == "" {
			victims = append(victims, e.Victim)
		}
	}
	o.stores = checkStores(ctx, c.Address, c.Secret, victims, storesWait)
	o.verdicts = []verdict{
		{"sort", fmt.Sprintf("%s sorted: every partition in order, count and checksum equal the input's", benchfmt.FormatSize(int64(opts.sortSize))), sortErr},
		{"bank-conservation", fmt.Sprintf("balances sum to %d, none negative, each branch's journal replays to its balances", bankBranches*bankAccounts*bankInitial), o.bank.Conservation},
		{"bank-order", "per caller and branch: calls applied in order, at most once, none skipped, as sent", o.bank.Order},
		{"task-results", fmt.Sprintf("%d tasks: each result delivered to the driver exactly once, for its task, unchanged at the end", o.hist.Tasks), o.hist.Verified},
		{"stores", fmt.Sprintf("%d live nodes' stores at 0 bytes, 0 objects, 0 spill files; %d killed node(s) declared dead (waited %.1fs)",
			o.stores.Nodes, len(victims), o.stores.Waited.Seconds()), o.stores.Verified},
		{"no-read-after-free", fmt.Sprintf("%d live nodes' stores: no Get of an object its owner had freed (a killed node's count is lost with it)",
			o.stores.Nodes), o.stores.NoReadAfterFree},
	}
	if missing := firings - len(o.log.Timed); missing > 0 {
		o.verdicts = append(o.verdicts, verdict{"plan", "every timed rule fired",
			fmt.Errorf("%d of %d timed firings did not happen within %v", missing, firings, opts.maxDuration)})
	}
}

// storesWait bounds the wait for the stores to empty at the end.
const storesWait = 30 * time.Second

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
