package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// TestRunningPrefersTheTasksRuntime: a call made with a task's context
// uses the runtime executing the task, whatever the process's current
// runtime is; without one it uses the current runtime, or says why there
// is none.
func TestRunningPrefersTheTasksRuntime(t *testing.T) {
	if Current() != nil {
		t.Fatal("a runtime is current before the test")
	}
	if _, err := Running(context.Background()); !errors.Is(err, errs.ErrNotInitialized) {
		t.Errorf("no runtime: %v, want ErrNotInitialized", err)
	}
	task, other := &Runtime{}, &Runtime{}
	ctx := context.WithValue(context.Background(), taskKey{}, &taskInfo{rt: task})
	if rt, err := Running(ctx); rt != task || err != nil {
		t.Errorf("in a task, none current: %p, %v; want the task's %p", rt, err, task)
	}
	process.mu.Lock()
	install(other)
	process.mu.Unlock()
	t.Cleanup(func() {
		process.mu.Lock()
		process.cur.Store(nil)
		process.shutDown.Store(false)
		process.mu.Unlock()
	})
	if rt, err := Running(context.WithoutCancel(ctx)); rt != task || err != nil {
		t.Errorf("in a task, another current: %p, %v; want the task's %p", rt, err, task)
	}
	if rt, err := Running(context.Background()); rt != other || err != nil {
		t.Errorf("outside a task: %p, %v; want the current %p", rt, err, other)
	}
	if rt := FromContext(context.Background()); rt != nil {
		t.Errorf("FromContext outside a task: %p", rt)
	}
	task.closed.Store(true)
	if _, err := Running(ctx); !errors.Is(err, errs.ErrShutDown) {
		t.Errorf("a stopped task runtime: %v, want ErrShutDown", err)
	}
	process.mu.Lock()
	process.cur.Store(nil)
	process.shutDown.Store(true)
	process.mu.Unlock()
	if _, err := Running(context.Background()); !errors.Is(err, errs.ErrShutDown) {
		t.Errorf("after Shutdown: %v, want ErrShutDown", err)
	}
}
