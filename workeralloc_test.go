package atoll_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// allocCounter is an actor that reads its own process's allocation count.
type allocCounter struct{}

var (
	allocCounterType = atoll.NewActorType("alloc.counter", func(context.Context) (*allocCounter, error) { return &allocCounter{}, nil })
	mallocs          = atoll.NewMethod0(allocCounterType, "Mallocs", func(*allocCounter, context.Context) (uint64, error) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.Mallocs, nil
	})
	allocNoop = atoll.NewMethod0(allocCounterType, "Noop", func(*allocCounter, context.Context) (int, error) { return 1, nil })
)

// TestWorkerAllocationsPerCall counts what a worker process allocates
// for each call it runs, pipelined, from the frame that brings it to the
// result's frame. Between two and three: the call's context (with its
// info, the room for its result and its result's block), the boxed
// result, and a share of a run of decoded pushes (the race detector adds
// one). It was 19, then 9.00 before decoded pushes came a run at a time,
// 8.29 before the call's context was made lazily and with its info, its
// value put in the result block, its id decoded into the push's block,
// its result in room its context keeps and the result block in the
// context.
func TestWorkerAllocationsPerCall(t *testing.T) {
	ctx := startProcesses(t)
	a, err := allocCounterType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]atoll.ObjectRef[int], 1000)
	burst := func() {
		for i := range refs {
			refs[i] = allocNoop.Remote(ctx, a)
		}
		if _, err := atoll.GetAll(ctx, refs); err != nil {
			t.Fatal(err)
		}
	}
	burst() // the connection's buffers and the tables grow first
	const bursts = 10
	before, err := atoll.Get(ctx, mallocs.Remote(ctx, a))
	if err != nil {
		t.Fatal(err)
	}
	for range bursts {
		burst()
	}
	after, err := atoll.Get(ctx, mallocs.Remote(ctx, a))
	if err != nil {
		t.Fatal(err)
	}
	perCall := float64(after-before) / (bursts * float64(len(refs)))
	t.Logf("%.2f allocations a call in the actor's process", perCall)
	// Besides the calls, the process's own timers and reports allocate a
	// little while they run: a bound with room for those and the race
	// detector's, well below the 8.29 of before.
	if perCall > 6 {
		t.Errorf("%.2f allocations a call in the actor's process, want at most 6", perCall)
	}
}

// TestWorkerAllocationProfile: with EnvWorkerMemProfile set, each worker
// process that exits writes its allocation profile, and the profile
// holds the allocations of the calls it ran.
func TestWorkerAllocationProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(atoll.EnvWorkerMemProfile, dir)
	t.Setenv(atoll.EnvWorkerMemProfileRate, "1")
	ctx := startProcesses(t)
	a, err := allocCounterType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]atoll.ObjectRef[int], 200)
	for i := range refs {
		refs[i] = allocNoop.Remote(ctx, a)
	}
	if _, err := atoll.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	if err := atoll.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var files []string
	testutil.Eventually(t, "a worker's allocation profile", func() bool {
		files, _ = filepath.Glob(filepath.Join(dir, "worker-*.allocs"))
		return len(files) > 0
	})
	// The process writes the file and then exits: read it once it is
	// whole (a pprof profile is a gzipped protobuf message; its string
	// table names the sample types and the functions that allocated).
	var table []byte
	testutil.Eventually(t, "the allocation profile written whole", func() bool {
		f, err := os.Open(files[0])
		if err != nil {
			return false
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return false
		}
		table, err = io.ReadAll(z)
		return err == nil
	})
	for _, want := range []string{"alloc_objects", "alloc_space", "internal/workerproto.(*Server).handle"} {
		if !bytes.Contains(table, []byte(want)) {
			t.Errorf("the worker's allocation profile does not name %q", want)
		}
	}
}
