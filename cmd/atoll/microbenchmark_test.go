package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/jobs"
)

// runAsCommand makes this test binary the atoll command (main) when set:
// tests run it as a subprocess, and its worker processes, re-executed
// with the same arguments and environment, go through main as well.
const runAsCommand = "ATOLL_CMD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsCommand) == "1" {
		main()
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == printingDriverArg && os.Getenv(jobs.EnvSubmissionID) != "" {
		os.Exit(printingDriver()) // a job TestJobSubmit submits (job_test.go)
	}
	if atoll.IsWorker() {
		_ = atoll.Init(context.Background())
	}
	os.Exit(m.Run())
}

func execute(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	if err != nil {
		printError(&errOut, err) // as main does
	}
	return out.String(), errOut.String(), err
}

func TestMicrobenchmarkBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-mode", "threads"}, `-mode "threads": want process or inprocess`},
		{[]string{"-repeat", "0"}, "-repeat 0: want at least 1"},
		{[]string{"-repeat", "many"}, `invalid value "many" for flag -repeat`},
		{[]string{"-duration", "-1s"}, "-duration -1s: must not be negative"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--filter", "("}, `-filter "(": error parsing regexp`},
		{[]string{"-filter", "^no_such_metric$"}, "no metric matches the filter"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, stderr, err := execute(append([]string{"microbenchmark"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
			continue
		}
		if !strings.HasPrefix(stderr, "atoll: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q", tc.args, stderr)
		}
	}
}

func TestMicrobenchmarkHelp(t *testing.T) {
	for _, args := range [][]string{{"microbenchmark", "-h"}, {"microbenchmark", "--help"}, {"help", "microbenchmark"}} {
		stdout, _, err := execute(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"-json", "-mode", "-filter REGEX", "-repeat N", "single_client_tasks_sync", "n_n_actor_calls_with_arg_async"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, stdout)
			}
		}
	}
}

// TestMicrobenchmarkCommand runs the command as a program, in both
// modes: in process mode its worker processes rerun it with the same
// arguments, and stdout must hold the JSON lines and nothing else.
func TestMicrobenchmarkCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the cluster in a subprocess")
	}
	for _, mode := range []string{"process", "inprocess"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "microbenchmark", "-json", "-mode", mode, "-repeat", "2",
				"-duration", "0", "-filter", "^(single_client_tasks_sync|1_1_actor_calls_sync)$")
			cmd.Env = append(os.Environ(), runAsCommand+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("stdout has %d lines, want 2:\n%s\nstderr:\n%s", len(lines), stdout.String(), stderr.String())
			}
			for i, want := range []string{"single_client_tasks_sync", "1_1_actor_calls_sync"} {
				var r benchfmt.Record
				if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
					t.Fatalf("line %q: %v", lines[i], err)
				}
				if r.Metric != want || r.Value <= 0 || r.BaselineValue <= 0 || r.Ratio <= 0 ||
					r.Config["worker_mode"] != mode || r.Config["repetitions"] != 2.0 {
					t.Errorf("record %+v", r)
				}
			}
		})
	}
}
