package main

import (
	"slices"
	"strings"
	"testing"
)

// journal applies calls to fresh balances, as a branch does.
func journal(calls ...transfer) branchReport {
	var r branchReport
	r.Balances = make([]int64, bankAccounts)
	for i := range r.Balances {
		r.Balances[i] = bankInitial
	}
	for _, t := range calls {
		ok := t.From < 0 || r.Balances[t.From] >= t.Amount
		if ok {
			if t.From >= 0 {
				r.Balances[t.From] -= t.Amount
			}
			if t.To >= 0 {
				r.Balances[t.To] += t.Amount
			}
		}
		r.Journal = append(r.Journal, applied{T: t, OK: ok})
	}
	return r
}

func driverCall(seq, from, to int, amount int64) transfer {
	return transfer{Caller: "driver", Seq: seq, From: from, To: to, Amount: amount}
}

// taskCalls are task id's calls to branch bi, as it sends them.
func taskCalls(id, attempt, n, bi int) []transfer {
	var out []transfer
	seq := 0
	for _, c := range callerTransfers(id, n) {
		if c.branch == bi {
			seq++
			c.t.Caller, c.t.Seq = taskCaller(id, attempt), seq
			out = append(out, c.t)
		}
	}
	return out
}

func TestBankCheckerPassesAGoodHistory(t *testing.T) {
	// Task 3 sends 10 calls; its first attempt was killed after one call
	// to each branch, its second finished.
	var states []branchReport
	sent := make([]int, bankBranches)
	for bi := range bankBranches {
		all := taskCalls(3, 1, 10, bi)
		calls := append(taskCalls(3, 0, 10, bi)[:1], driverCall(1, 0, 1, 5), driverCall(2, 2, 3, 7))
		calls = append(calls, all...)
		states = append(states, journal(calls...))
		sent[bi] = 2
	}
	finished := map[string]bankTaskResult{"t3.a1": {Caller: "t3.a1", Sent: []int{len(taskCalls(3, 1, 10, 0)), len(taskCalls(3, 1, 10, 1))}}}
	rep := checkBank(states, sent, map[int]int{3: 10}, finished, 1)
	if rep.Conservation != nil || rep.Order != nil {
		t.Fatalf("a good history failed: %v; %v", rep.Conservation, rep.Order)
	}
	if rep.Retried != 1 || rep.Callers != 3 {
		t.Fatalf("retried %d, callers %d; want 1 and 3", rep.Retried, rep.Callers)
	}
}

func TestBankCheckerFindsViolations(t *testing.T) {
	sent := []int{3, 0}
	empty := journal()
	for name, c := range map[string]struct {
		state branchReport
		sent  []int
		order string // a part of the order error, "" for none
		cons  string // a part of the conservation error
	}{
		"out of order": {state: journal(driverCall(1, 0, 1, 5), driverCall(3, 0, 1, 5), driverCall(2, 0, 1, 5)), sent: sent, order: "call 3 applied after its call 1"},
		"twice":        {state: journal(driverCall(1, 0, 1, 5), driverCall(2, 0, 1, 5), driverCall(2, 0, 1, 5), driverCall(3, 0, 1, 5)), sent: sent, order: "call 2 applied after its call 2"},
		"lost":         {state: journal(driverCall(1, 0, 1, 5), driverCall(2, 0, 1, 5)), sent: sent, order: "2 of the driver's 3 calls"},
		"money made": {state: func() branchReport {
			r := journal(driverCall(1, 0, 1, 5), driverCall(2, 0, 1, 5), driverCall(3, 0, 1, 5))
			r.Balances[4] += 10
			return r
		}(), sent: sent, cons: "journal replayed"},
		"a refusal that the funds allowed": {state: func() branchReport {
			r := journal(driverCall(1, 0, 1, 5), driverCall(2, 0, 1, 5), driverCall(3, 0, 1, 5))
			r.Journal[1].OK = false
			return r
		}(), sent: sent, cons: "replay says applied=true"},
	} {
		t.Run(name, func(t *testing.T) {
			rep := checkBank([]branchReport{c.state, empty}, c.sent, nil, nil, 1)
			for _, e := range []struct {
				err  error
				want string
			}{{rep.Order, c.order}, {rep.Conservation, c.cons}} {
				switch {
				case e.want == "" && e.err != nil:
					t.Errorf("unexpected: %v", e.err)
				case e.want != "" && (e.err == nil || !strings.Contains(e.err.Error(), e.want)):
					t.Errorf("got %v, want an error with %q", e.err, e.want)
				}
			}
		})
	}
	// A task's call that carries something it did not send.
	calls := taskCalls(5, 0, 6, 0)
	calls[0].Amount++
	rep := checkBank([]branchReport{journal(calls...), empty}, []int{0, 0}, map[int]int{5: 6}, nil, 1)
	if rep.Order == nil || !strings.Contains(rep.Order.Error(), "it sent") {
		t.Errorf("altered call: %v", rep.Order)
	}
}

func TestHistoryCheckerFindsViolations(t *testing.T) {
	subs := []submission{{ID: 0, Sum: 7}, {ID: 1, Sum: 7}}
	good := []delivery{{ID: 1, Result: echoResult{ID: 1, Sum: 7}}, {ID: 0, Result: echoResult{ID: 0, Sum: 7, Attempt: 1}}}
	again := []echoResult{{ID: 0, Sum: 7, Attempt: 1}, {ID: 1, Sum: 7}}
	if rep := checkHistory(subs, good, again); rep.Verified != nil || rep.Retried != 1 {
		t.Fatalf("a good history: %v, %d retried", rep.Verified, rep.Retried)
	}
	for name, c := range map[string]struct {
		deliveries []delivery
		again      []echoResult
		want       string
	}{
		"twice":     {append(slices.Clone(good), good[0]), again, "delivered twice"},
		"never":     {good[:1], again, "never delivered"},
		"crossed":   {[]delivery{{ID: 1, Result: echoResult{ID: 0, Sum: 7}}, good[1]}, again, "got the result"},
		"changed":   {good, []echoResult{{ID: 0, Sum: 7, Attempt: 2}, {ID: 1, Sum: 7}}, "result changed"},
		"stranger":  {append(slices.Clone(good), delivery{ID: 9}), again, "never submitted"},
		"wrong sum": {[]delivery{good[0], {ID: 0, Result: echoResult{ID: 0, Sum: 8}}}[1:], again, "got the result"},
	} {
		t.Run(name, func(t *testing.T) {
			rep := checkHistory(subs, c.deliveries, c.again)
			if rep.Verified == nil || !strings.Contains(rep.Verified.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", rep.Verified, c.want)
			}
		})
	}
}
