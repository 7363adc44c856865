package testutil

import (
	"testing"
	"time"
)

// WaitTimeout is how long Eventually waits: long enough for a cluster of
// node processes to converge under -race on a loaded 2-core machine, short
// enough that a hung test fails well before the package's timeout.
const WaitTimeout = 30 * time.Second

// pollEvery is how often a condition is checked.
const pollEvery = 10 * time.Millisecond

// Eventually checks cond every 10 ms until it holds, failing t with what
// after WaitTimeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, WaitTimeout, what, cond)
}

// EventuallyWithin checks cond every 10 ms until it holds, failing t with
// what after timeout.
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("after %v still waiting for %s", timeout, what)
		}
	}
}

// Closed reports whether c is closed, without waiting.
func Closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
