package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/pss"
	"github.com/atoll-runtime/atoll/internal/sortcheck"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestOutOfCoreSortIsVerified sorts four times more data than the object
// store holds, in worker processes, and checks the report: with the input
// read from its source twice, and generated into the store first.
func TestOutOfCoreSortIsVerified(t *testing.T) {
	for _, tc := range []struct {
		input  string
		phases []string
	}{
		{inputSource, []string{"read and sample 8 chunks", "partition 8 chunks into 8 buckets each", "sort and verify 8 partitions"}},
		{inputStore, []string{"generate and sample 8 chunks", "partition 8 chunks into 8 buckets each", "sort and verify 8 partitions"}},
	} {
		t.Run(tc.input, func(t *testing.T) { testOutOfCoreSort(t, tc.input, tc.phases) })
	}
}

func testOutOfCoreSort(t *testing.T, input string, phases []string) {
	var out, progress bytes.Buffer
	opts := options{size: 32 << 20, store: 8 << 20, partitions: 8, workers: 2, mode: "process", baseline: 32 << 20, input: input, json: true}
	if err := run(context.Background(), opts, &out, &progress); err != nil {
		t.Fatal(err)
	}
	// Every phase of the sort shows its progress to the end.
	steps := map[string]string{} // phase -> its last step
	phase := ""
	for _, line := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		_, what, _ := strings.Cut(line, "] ")
		if step, ok := strings.CutPrefix(what, "  "); ok {
			steps[phase] = step
		} else {
			phase = what
		}
	}
	for _, p := range phases {
		if steps[p] != "8/8" {
			t.Errorf("phase %q ended at step %q, want 8/8; progress:\n%s", p, steps[p], progress.String())
		}
	}
	metrics, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	if metrics["wall_s"]["verified"] != true {
		t.Fatalf("sort not verified: %v", metrics["wall_s"])
	}
	// Both baselines ran (the parallel one checks its own result: run
	// fails if it is wrong).
	if metrics["wall_s"]["baseline_value"].(float64) <= 0 || metrics["wall_s_vs_one_goroutine"]["baseline_value"].(float64) <= 0 {
		t.Fatalf("baselines missing: %v, %v", metrics["wall_s"], metrics["wall_s_vs_one_goroutine"])
	}
	if metrics["spilled_bytes"]["value"].(float64) < 24<<20 {
		t.Fatalf("sorting 32 MiB under an 8 MiB store spilled only %v bytes", metrics["spilled_bytes"]["value"])
	}
	if metrics["restored_bytes"]["value"].(float64) <= 0 {
		t.Fatal("nothing was restored")
	}
	if metrics["spill_files_left"]["value"].(float64) != 0 {
		t.Fatalf("%v spill files left after every object was freed", metrics["spill_files_left"]["value"])
	}
}

func TestUnknownInputIsAnError(t *testing.T) {
	opts := options{size: 1 << 20, store: 1 << 20, partitions: 2, workers: 1, mode: "process", input: "disk"}
	if err := run(context.Background(), opts, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "-input") {
		t.Fatalf("run with -input disk: %v, want an error naming -input", err)
	}
}

func TestSummaryDetectsDisorderAndLoss(t *testing.T) {
	a := sortcheck.Summarize([]int64{1, 2, 3})
	b := sortcheck.Summarize([]int64{1, 3, 2})
	if !a.Sorted || b.Sorted || a.Checksum != b.Checksum {
		t.Fatalf("summaries: %+v %+v", a, b)
	}
	if sortcheck.Summarize([]int64{1, 2, 2}).Checksum == a.Checksum {
		t.Fatal("the checksum missed a changed value")
	}
}

// TestWorkerKilledMidSortLosesNothing kills a worker process while the
// sort spills; its task is retried and the output still verifies.
func TestWorkerKilledMidSortLosesNothing(t *testing.T) {
	ctx := context.Background()
	done := make(chan error, 1)
	opts := options{size: 32 << 20, store: 8 << 20, partitions: 8, workers: 2, mode: "process", input: inputSource, json: true}
	killed := make(chan int, 1)
	go func() {
		// Wait for the sort to be spilling, then kill one worker process.
		for {
			m, err := atolltest.Memory(ctx)
			if err == nil && m.SpilledBytesTotal > 8<<20 {
				break
			}
			select {
			case err := <-done:
				done <- err
				killed <- 0
				return
			case <-time.After(time.Millisecond):
			}
		}
		kids, _ := pss.Tree(os.Getpid())
		for _, pid := range kids {
			if pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed <- pid
				return
			}
		}
		killed <- 0
	}()
	var out bytes.Buffer
	err := run(ctx, opts, &out, io.Discard)
	done <- err
	if err != nil {
		t.Fatalf("sort after a worker was killed: %v", err)
	}
	if pid := <-killed; pid == 0 {
		t.Fatal("no worker was killed: the sort ended before spilling 8 MiB")
	}
	if !bytes.Contains(out.Bytes(), []byte(`"verified":true`)) {
		t.Fatalf("not verified: %s", out.String())
	}
}
