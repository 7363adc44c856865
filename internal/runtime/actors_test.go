package runtime

import (
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/registry"
)

// A handle names each method's spec function as registry.MethodName
// does, whichever method it was last called with, from any goroutine;
// calls of the method it called last allocate nothing for it.
func TestActorFunction(t *testing.T) {
	id := ids.NewActorID()
	a := &Actor{ID: id, TypeName: "pkg.Counter", idBytes: id.Bytes()}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				m := []string{"incr", "get", "reset"}[(g+i)%3]
				if got, want := a.Function(m), registry.MethodName("pkg.Counter", m); got != want {
					t.Errorf("Function(%q) = %q, want %q", m, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	a.Function("incr")
	if n := testing.AllocsPerRun(100, func() { a.Function("incr") }); n != 0 {
		t.Errorf("a run of calls of one method: %v allocations a call, want 0", n)
	}
	if got := ids.MustFromBytes(a.IDBytes()); got != id {
		t.Errorf("IDBytes reads %v, want %v", got, id)
	}
}
