package data_test

import (
	"context"
	"os"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// TestMain runs every test with the Arrow pool's checks on, in this
// process and the worker processes it starts: a buffer used after its
// release reads as poison, and a double release panics.
func TestMain(m *testing.M) {
	os.Setenv(data.EnvCheckFreed, "1")
	testmain.Run(m)
}

// start runs atoll for one test with worker processes (a dataset's tasks
// run in them, reading blocks from shared memory) and a small store.
func start(t *testing.T, opts ...atoll.Option) context.Context { return testmain.Start(t, opts...) }
