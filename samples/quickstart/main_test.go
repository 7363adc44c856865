package main

import (
	"context"
	"os"
	"testing"

	"github.com/atoll-runtime/atoll"
)

func TestMain(m *testing.M) {
	if atoll.IsWorker() {
		_ = atoll.Init(context.Background()) // serves tasks; never returns
	}
	os.Exit(m.Run())
}

func TestQuickstartRuns(t *testing.T) {
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
