package data_test

import (
	"context"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// start runs atoll for one test with worker processes (a dataset's tasks
// run in them, reading blocks from shared memory) and a small store.
func start(t *testing.T, opts ...atoll.Option) context.Context { return testmain.Start(t, opts...) }
