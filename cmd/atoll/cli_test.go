package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// TestUsageOnMissingArguments: every command that takes arguments says
// which one is missing, prints its usage, and fails with
// ErrInvalidArgument; so does one given too many.
func TestUsageOnMissingArguments(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "atoll: list: missing what to list (nodes, actors, jobs, tasks, objects or placement-groups)\n"},
		{[]string{"list", "task"}, `atoll: list "task": want nodes, actors, jobs, tasks, objects or placement-groups` + "\n"},
		{[]string{"list", "nodes", "--failed"}, "atoll: list nodes: --failed filters only tasks\n"},
		{[]string{"list", "objects", "--limit", "0"}, "atoll: --limit 0: want at least 1\n"},
		{[]string{"list", "objects", "--min-size", "1XB"}, "atoll: list: invalid argument \"1XB\" for \"--min-size\" flag: size \"1XB\": unknown unit (want B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)\n"},
		{[]string{"amm"}, "atoll: amm: missing what to do (start, stop or status)\n"},
		{[]string{"drain"}, "atoll: drain: missing NODE (a node id or its first digits)\n"},
		{[]string{"job"}, "atoll: job: missing a subcommand (submit, list, status, logs or stop)\n"},
		{[]string{"job", "frobnicate"}, `atoll: job: unexpected argument "frobnicate"` + "\n"},
		{[]string{"job", "submit"}, "atoll: job submit: missing BINARY (after --)\n"},
		{[]string{"job", "status"}, "atoll: job status: missing JOB (a job id or its first digits)\n"},
		{[]string{"job", "logs"}, "atoll: job logs: missing JOB (a job id or its first digits)\n"},
		{[]string{"job", "stop"}, "atoll: job stop: missing JOB (a job id or its first digits)\n"},
		{[]string{"job", "list", "extra"}, `atoll: job list: unexpected argument "extra"` + "\n"},
		{[]string{"logs"}, "atoll: logs: missing NODE, JOB or WORKER (an id, or its first digits)\n"},
		{[]string{"status", "extra"}, `atoll: status: unexpected argument "extra"` + "\n"},
		{[]string{"status", "--bogus"}, "atoll: status: unknown flag: --bogus\n"},
	} {
		stdout, stderr, err := execute(tc.args...)
		if !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%q: error %v, want ErrInvalidArgument", tc.args, err)
		}
		if stdout != "" || !strings.HasPrefix(stderr, tc.want) || !strings.Contains(stderr, "\nUsage:\n  atoll "+tc.args[0]) {
			t.Errorf("%q: stdout %q, stderr:\n%s\nwant it to start with %q and hold the usage", tc.args, stdout, stderr, tc.want)
		}
	}
}

// TestErrorText: errors print once, without internal package prefixes
// or a part repeated, and stay typed for errors.Is.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("start node: %w", fmt.Errorf("atoll: join the cluster: %w", fmt.Errorf("cluster: listen: %w",
			errs.Unavailablef("remote: listen tcp 127.0.0.1:8076: bind: address already in use")))),
			"start node: join the cluster: listen: listen tcp 127.0.0.1:8076: bind: address already in use"},
		{fmt.Errorf("atoll: %w", errs.NotFoundf("gcs: no live actor named %q in namespace %q", "c", "")),
			`no live actor named "c" in namespace ""`},
		{errs.Invalidf("drain ab: atoll: node id \"ab\": give at least 4 hex digits"), `drain ab: node id "ab": give at least 4 hex digits`},
		{errors.New("a: a: b\natoll: c"), "a: b\nc"},
	} {
		if got := errorText(tc.err); got != tc.want {
			t.Errorf("errorText(%q)\n = %q\nwant %q", tc.err.Error(), got, tc.want)
		}
		var buf bytes.Buffer
		printError(&buf, tc.err)
		if buf.String() != "atoll: "+tc.want+"\n" {
			t.Errorf("printError: %q", buf.String())
		}
	}
	err := fmt.Errorf("atoll: %w", errs.NotFoundf("gcs: job x not found"))
	if !errors.Is(err, atoll.ErrNotFound) {
		t.Error("a wrapped NotFound lost its type")
	}
}

// TestTableStyle: one style for every table: text left, numbers right,
// "-" for an empty cell, two spaces between columns, no trailing blanks.
func TestTableStyle(t *testing.T) {
	tb := newTable("NODE", "ROLE", "USED>", "OBJECTS>")
	tb.add("aaaaaaaa", "head", "1.5GiB", "12")
	tb.add("bb", "", "0B", "3")
	var out bytes.Buffer
	if err := tb.write(&out); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NODE      ROLE    USED  OBJECTS\n" +
		"aaaaaaaa  head  1.5GiB       12\n" +
		"bb        -         0B        3\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestHumanSizes: byte counts print with a binary unit everywhere.
func TestHumanSizes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0B", 512: "512B", 1023: "1023B", 1024: "1KiB", 1536: "1.5KiB", 256 << 20: "256MiB",
		300<<20 + 1<<19: "300MiB", 3 << 29: "1.5GiB", 5 << 40: "5TiB", 25276026880: "23.5GiB",
	} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := resources(map[string]float64{"CPU": 2, "memory": 25276026880, "GPU": 0.5}); got != "CPU 2, GPU 0.5, memory 23.5GiB" {
		t.Errorf("resources: %q", got)
	}
}

var (
	snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	hexString = regexp.MustCompile(`^([0-9a-f]{2})+$`)
)

// dataMaps are JSON objects whose keys are data (resource names, refusal
// reasons), not field names.
var dataMaps = map[string]bool{"resources": true, "total": true, "available": true, "refused": true}

// checkJSONDocument checks the CLI's JSON style on one command's output:
// exactly one JSON document, an object, keys in snake_case, ids (keys
// ending in _id) as hex.
func checkJSONDocument(t *testing.T, what, out string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Errorf("%s: not JSON: %v\n%s", what, err, out)
		return
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		t.Errorf("%s: more than one JSON document (%v)\n%s", what, err, out)
	}
	if _, ok := doc.(map[string]any); !ok {
		t.Errorf("%s: the document is a %T, want an object", what, doc)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !snakeCase.MatchString(k) {
					t.Errorf("%s: key %s.%s is not snake_case", what, path, k)
				}
				if strings.HasSuffix(k, "_id") {
					if s, ok := e.(string); !ok || !hexString.MatchString(s) {
						t.Errorf("%s: %s.%s = %v, want a hex id", what, path, k, e)
					}
				}
				if dataMaps[k] {
					if _, ok := e.(map[string]any); ok {
						continue
					}
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", doc)
}

// checkJSONStyle runs every command's --json against the cluster at
// addr; jobID is a job it holds.
func checkJSONStyle(t *testing.T, addr, jobID string) {
	t.Helper()
	for _, args := range [][]string{
		{"status"}, {"list", "nodes"}, {"list", "actors"}, {"list", "jobs"}, {"list", "tasks"}, {"list", "objects"}, {"memory"}, {"amm", "status"},
		{"job", "list", "--all"}, {"job", "status", jobID},
	} {
		stdout, stderr, err := execute(append(append(args, "--json"), "--address", addr)...)
		if err != nil {
			t.Errorf("%v --json: %v\n%s", args, err, stderr)
			continue
		}
		checkJSONDocument(t, strings.Join(args, " ")+" --json", stdout)
	}
}

// TestDrainLine: a drain's first line says it counts the node's objects,
// not that there are none to move.
func TestDrainLine(t *testing.T) {
	for _, tc := range []struct {
		d    clusterclient.DrainStatus
		want string
	}{
		{clusterclient.DrainStatus{NodeID: "cccccccc33", State: "counting objects"}, "node cccccccc: counting the objects to move"},
		{clusterclient.DrainStatus{NodeID: "cccccccc33", State: "moving objects", ObjectsLeft: 2, BytesLeft: 3 << 20, Running: 1},
			"node cccccccc: moving objects; 2 objects (3MiB) to move, 0 tasks queued, 1 running"},
		{clusterclient.DrainStatus{NodeID: "cccccccc33", State: "left"}, "node cccccccc drained and left the cluster in 1.5s"},
	} {
		if got := drainLine(tc.d, 1500*time.Millisecond); got != tc.want {
			t.Errorf("drainLine(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
