package cluster

import (
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m)
}

// waitTimeout bounds every wait of these tests.
const waitTimeout = 20 * time.Second

// recv returns the next value from ch, failing the test with msg after
// waitTimeout.
func recv[T any](t testing.TB, ch <-chan T, msg string) T {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("after %v: %s", waitTimeout, msg)
		panic("unreachable")
	}
}
