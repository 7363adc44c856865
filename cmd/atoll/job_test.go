package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// buildQuickstart builds samples/quickstart into a new temporary
// directory and returns the binary's path.
func buildQuickstart(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build samples/quickstart")
	}
	dir, err := os.MkdirTemp("", "quickstart-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, "quickstart")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/atoll-runtime/atoll/samples/quickstart").CombinedOutput()
	if err != nil {
		t.Fatalf("go build samples/quickstart: %v\n%s", err, out)
	}
	return bin
}

// jobStatus reads a job's status through `atoll job status --json`.
func jobStatus(addr, id string) (jobRow, error) {
	var r jobRow
	stdout, stderr, err := execute("job", "status", "--address", addr, "--json", id)
	if err != nil {
		return r, fmt.Errorf("job status %s: %w\n%s", id, err, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		return r, fmt.Errorf("job status --json: %w\n%s", err, stdout)
	}
	return r, nil
}

// submit runs `atoll job submit` and returns the job's id.
func submit(t *testing.T, addr string, argv ...string) string {
	t.Helper()
	return submitWith(t, addr, nil, argv...)
}

// submitWith runs `atoll job submit` with flags.
func submitWith(t *testing.T, addr string, flags []string, argv ...string) string {
	t.Helper()
	args := append(append([]string{"job", "submit", "--address", addr}, flags...), "--")
	stdout, stderr, err := execute(append(args, argv...)...)
	if err != nil {
		t.Fatalf("job submit %v: %v\n%s%s", argv, err, stdout, stderr)
	}
	m := regexp.MustCompile(`(?m)^job ([0-9a-f]{32}) submitted$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("job submit output:\n%s", stdout)
	}
	return m[1]
}

// waitState waits until the job's state is want (a busy machine may
// make a status query fail now and then: it is asked again).
func waitState(t *testing.T, addr, id, want string, timeout time.Duration) jobRow {
	t.Helper()
	var r jobRow
	var last error
	testutil.EventuallyWithin(t, timeout, "job "+id[:8]+" "+want, func() bool {
		if r, last = jobStatus(addr, id); last != nil {
			return false
		}
		if r.State != want && r.ExitCode != nil {
			logs, _, _ := execute("job", "logs", "--address", addr, id)
			t.Fatalf("job %s ended %s (exit %d, %s), want %s; its log:\n%s", id[:8], r.State, *r.ExitCode, r.Message, want, logs)
		}
		return r.State == want
	})
	return r
}

// TestJobSubmit submits samples/quickstart to a 3-node cluster from a
// directory removed right after the submission (the nodes get the
// binary's bytes, not its path), reads its output with `atoll job logs`,
// lists it, and stops a long job with `atoll job stop`.
func TestJobSubmit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of node processes")
	}
	bin := buildQuickstart(t)
	isolate(t)
	// The default failure timeout, not the test clusters' 2 s: the
	// quickstart moves a 256 MiB array to every node, and a busy machine
	// then got a node declared dead.
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{ObjectStoreMemory: 512 << 20, FailureTimeout: 5 * time.Second},
		Config: func(i int, cfg *nodeconfig.Config) { cfg.Dashboard = i == 0 }})
	t.Setenv(nodeconfig.EnvSecret, c.Secret())
	addr := c.Address()

	id := submit(t, addr, bin)
	if err := os.RemoveAll(filepath.Dir(bin)); err != nil {
		t.Fatal(err)
	}
	r := waitState(t, addr, id, "SUCCEEDED", 3*time.Minute)
	if r.ExitCode == nil || *r.ExitCode != 0 || r.NodeID != c.Node(0).ID || !r.Submitted || r.EndTime == "" {
		t.Errorf("job status %+v: want exit status 0 on the head %s", r, c.Node(0).ID)
	}
	if strings.HasPrefix(r.WorkerBinary, filepath.Dir(bin)) || !strings.HasSuffix(r.WorkerBinary, "/quickstart") {
		t.Errorf("the job ran %s, want a copy of the binary sent to the node", r.WorkerBinary)
	}
	logs, stderr, err := execute("job", "logs", "--address", addr, id[:8])
	if err != nil {
		t.Fatalf("job logs: %v\n%s", err, stderr)
	}
	for _, want := range []string{"atoll connected to the cluster at ", ": 3 nodes", "tasks:   squares of 0..9 = [0 1 4 9 16 25 36 49 64 81]",
		"actor:   counter started at 100, after adding 1..5 it holds 115", "objects: 8 tasks summed one shared 256 MiB array"} {
		if !strings.Contains(logs, want) {
			t.Errorf("job logs lack %q:\n%s", want, logs)
		}
	}
	// Its tasks, as the nodes recorded them: ten squares, and the divide
	// by zero that failed.
	stdout, stderr, err := execute("list", "tasks", "--address", addr, "--name", "quickstart.square", "--json")
	var tasks struct{ Tasks []clusterclient.TimelineEvent }
	if err != nil || json.Unmarshal([]byte(stdout), &tasks) != nil || len(tasks.Tasks) != 10 {
		t.Errorf("list tasks --name quickstart.square: %v, want 10 tasks\n%s%s", err, stdout, stderr)
	}
	for _, task := range tasks.Tasks {
		if task.Failed || task.JobID != tasks.Tasks[0].JobID || task.JobID == "" || task.WorkerID == "" {
			t.Errorf("square task %+v: want finished, in the driver's job, with its worker", task)
		}
	}
	if stdout, stderr, err := execute("list", "tasks", "--address", addr, "--failed"); err != nil ||
		!regexp.MustCompile(`(?m)^[0-9a-f]{8} +quickstart\.divide +task +FAILED .*division by zero`).MatchString(stdout) || strings.Contains(stdout, "quickstart.square") {
		t.Errorf("list tasks --failed: %v, want only the divide\n%s%s", err, stdout, stderr)
	}
	if stdout, stderr, err := execute("list", "tasks", "--address", addr, "--limit", "3", "--json"); err != nil ||
		json.Unmarshal([]byte(stdout), &tasks) != nil || len(tasks.Tasks) != 3 {
		t.Errorf("list tasks --limit 3: %v\n%s%s", err, stdout, stderr)
	}
	// `atoll logs JOB` is the same log.
	if same, _, err := execute("logs", "--address", addr, id); err != nil || same != logs {
		t.Errorf("logs %s: %v\n%s", id[:8], err, same)
	}
	// And the dashboard's, for the reader token only.
	dashLog := func(token string) (int, string) {
		req, err := http.NewRequest("GET", c.DashboardURL()+"/api/logs/job/"+id+"?bytes=1048576", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Text  string `json:"text"`
			Final bool   `json:"final"`
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || !v.Final {
				t.Errorf("the dashboard's job log: %v, final %v; want the ended job's log", err, v.Final)
			}
		}
		return resp.StatusCode, v.Text
	}
	secret, err := clusterkey.Parse(c.Secret())
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := dashLog(""); code != http.StatusUnauthorized {
		t.Errorf("the dashboard's job log without the reader token: %d, want 401", code)
	}
	if code, text := dashLog(secret.NATSPassword(cluster.ReaderUser)); code != http.StatusOK || text != logs {
		t.Errorf("the dashboard's job log: %d\n%s\nwant 200 and the log atoll job logs printed", code, text)
	}
	// The driver recorded its own job as started by the submitted one.
	stdout, _, err = execute("job", "list", "--address", addr, "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var all struct{ Jobs []jobRow }
	if err := json.Unmarshal([]byte(stdout), &all); err != nil {
		t.Fatalf("job list --json: %v\n%s", err, stdout)
	}
	linked := false
	for _, j := range all.Jobs {
		linked = linked || (!j.Submitted && j.SubmissionID == id)
	}
	if len(all.Jobs) != 2 || !linked {
		t.Errorf("job list --all: want the submitted job and its driver's job naming it:\n%s", stdout)
	}

	// A failing program, and a long one stopped.
	failed := submit(t, addr, "/bin/false")
	if r := waitState(t, addr, failed, "FAILED", time.Minute); r.ExitCode == nil || *r.ExitCode != 1 {
		t.Errorf("/bin/false: %+v, want FAILED with exit status 1", r)
	}
	// Followed, a failing job's exit status is atoll's.
	stdout, stderr, err = execute("job", "submit", "--address", addr, "-f", "--", "/bin/sh", "-c", "echo bye; exit 3")
	if err == nil || exitCode(err) != 3 || !strings.HasSuffix(stdout, "bye\n") {
		t.Errorf("job submit -f of a job exiting 3: exit %d (%v)\n%s%s", exitCode(err), err, stdout, stderr)
	}
	long := submit(t, addr, "/bin/sh", "-c", "echo started; exec sleep 300")
	waitState(t, addr, long, "RUNNING", time.Minute)
	testutil.EventuallyWithin(t, time.Minute, "the long job's output", func() bool {
		out, _, _ := execute("job", "logs", "--address", addr, long)
		return out == "started\n"
	})
	stdout, stderr, err = execute("job", "stop", "--address", addr, long)
	if err != nil || stdout != "job "+long+" STOPPED\n" {
		t.Errorf("job stop: %v\n%s%s", err, stdout, stderr)
	}
	stdout, _, err = execute("job", "list", "--address", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{id[:8] + "  SUCCEEDED", failed[:8] + "  FAILED", long[:8] + "  STOPPED"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("job list lacks %q:\n%s", want, stdout)
		}
	}
	// -f on an ended job prints its log and returns.
	if out, _, err := execute("job", "logs", "--address", addr, "-f", long); err != nil || out != "started\n" {
		t.Errorf("job logs -f of an ended job: %q, %v", out, err)
	}
	// Worker output reaches the driver, prefixed with the task, the
	// worker's pid and its node, and so the job's log; each worker's
	// output is kept on its node (`atoll logs WORKER`).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	printing := submit(t, addr, self, printingDriverArg)
	waitState(t, addr, printing, "SUCCEEDED", 2*time.Minute)
	logs, _, err = execute("job", "logs", "--address", addr, printing)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, line := range []string{"hello", "warning"} {
			re := fmt.Sprintf(`(?m)^\(printer pid=\d+, node=[0-9a-f]{8}\) %s from task %d$`, line, i)
			if !regexp.MustCompile(re).MatchString(logs) {
				t.Errorf("the job's log lacks %s:\n%s", re, logs)
			}
		}
	}
	m := regexp.MustCompile(`(?m)^worker: ([0-9a-f]{32})$`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("the job's log names no worker:\n%s", logs)
	}
	for _, worker := range []string{m[1], m[1][:8]} { // its id, or its first digits
		if out, stderr, err := execute("logs", "--address", addr, worker); err != nil || !regexp.MustCompile(`(?m)^hello from task \d$`).MatchString(out) {
			t.Errorf("logs WORKER %s: %v\n%s%s", worker, err, out, stderr)
		}
	}

	// Every command's --json, on a cluster that has nodes, a dead actor
	// (the quickstart's counter) and jobs of both kinds.
	checkJSONStyle(t, addr, id)
	if _, _, err := execute("job", "status", "--address", addr, "ffffffff"); !errors.Is(err, atoll.ErrNotFound) {
		t.Errorf("job status of an unknown job: %v, want ErrNotFound", err)
	}

	// A working directory travels with the job.
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "in", "data.txt"), []byte("from the working directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cat := submitWith(t, addr, []string{"--working-dir", wd}, "/bin/cat", "in/data.txt")
	waitState(t, addr, cat, "SUCCEEDED", time.Minute)
	if out, _, err := execute("job", "logs", "--address", addr, cat); err != nil || out != "from the working directory\n" {
		t.Errorf("job logs of cat in its working directory: %q, %v", out, err)
	}

	// The reader role reads jobs and logs, and may neither submit nor stop.
	token, _, err := execute("reader-token")
	if err != nil {
		t.Fatal(err)
	}
	// A driver's object, as the stores list it.
	listObjectOfDriver(t, addr)
	running := submit(t, addr, "/bin/sleep", "300")
	waitState(t, addr, running, "RUNNING", time.Minute)
	t.Setenv(nodeconfig.EnvSecret, "")
	t.Setenv(nodeconfig.EnvReaderToken, strings.TrimSpace(token))
	if out, stderr, err := execute("job", "list", "--address", addr); err != nil || !strings.Contains(out, cat[:8]+"  SUCCEEDED") {
		t.Errorf("job list as a reader: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := execute("logs", "--address", addr, cat); err != nil || out != "from the working directory\n" {
		t.Errorf("logs JOB as a reader: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := execute("logs", "--address", addr, "--tail", "300", c.Node(0).ID[:8]); err != nil || !strings.Contains(out, "job started") {
		t.Errorf("logs NODE as a reader: %v\n%s%s", err, out, stderr)
	}
	if _, _, err := execute("job", "submit", "--address", addr, "--", "/bin/true"); !errors.Is(err, atoll.ErrPermissionDenied) {
		t.Errorf("job submit as a reader: %v, want ErrPermissionDenied", err)
	}
	if _, _, err := execute("job", "stop", "--address", addr, running); !errors.Is(err, atoll.ErrPermissionDenied) {
		t.Errorf("job stop as a reader: %v, want ErrPermissionDenied", err)
	}
	if r, err := jobStatus(addr, running); err != nil || r.State != "RUNNING" {
		t.Errorf("after a reader's stop: %+v, %v; want it RUNNING", r, err)
	}
	t.Setenv(nodeconfig.EnvReaderToken, "")
	t.Setenv(nodeconfig.EnvSecret, c.Secret())
	if out, stderr, err := execute("job", "stop", "--address", addr, running); err != nil || out != "job "+running+" STOPPED\n" {
		t.Errorf("job stop: %v\n%s%s", err, out, stderr)
	}

	// A job runs on the node --node names; when that node dies, the head
	// marks the job FAILED.
	onNode := submitWith(t, addr, []string{"--node", c.Node(1).ID[:8]}, "/bin/sleep", "300")
	if r := waitState(t, addr, onNode, "RUNNING", time.Minute); r.NodeID != c.Node(1).ID {
		t.Errorf("job submitted with --node %s runs on %s", c.Node(1).ID[:8], r.NodeID)
	}
	c.Kill(1)
	if r := waitState(t, addr, onNode, "FAILED", time.Minute); !strings.Contains(r.Message, "its node "+c.Node(1).ID[:8]+" died") {
		t.Errorf("the job of a dead node: %+v", r)
	}
}

// printingDriverArg makes this test binary, submitted as a job, a driver
// whose tasks print (printingDriver).
const printingDriverArg = "printing-driver"

// printer prints a line to stdout and one to stderr, and returns its
// worker's id.
var printer = atoll.NewFunc1("printer", func(ctx context.Context, i int) (string, error) {
	fmt.Printf("hello from task %d\n", i)
	fmt.Fprintf(os.Stderr, "warning from task %d\n", i)
	return atoll.CurrentWorkerID(ctx), nil
})

// lineWatch copies what it gets to w and tells when every wanted line
// has passed.
type lineWatch struct {
	mu   sync.Mutex
	w    io.Writer
	buf  strings.Builder
	want []string
	done chan struct{}
}

func (l *lineWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for _, w := range l.want {
		if !strings.Contains(l.buf.String(), w) {
			return l.w.Write(p)
		}
	}
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return l.w.Write(p)
}

// printingDriver runs three printer tasks on the cluster and waits until
// their output came back to it (worker output is streamed to the driver
// as it is written, asynchronously), then prints the workers' ids.
func printingDriver() int {
	ctx := context.Background()
	watch := &lineWatch{w: os.Stdout, done: make(chan struct{})}
	for i := range 3 {
		watch.want = append(watch.want, fmt.Sprintf("hello from task %d\n", i), fmt.Sprintf("warning from task %d\n", i))
	}
	if err := atoll.Init(ctx, atoll.WithWorkerOutput(watch)); err != nil {
		fmt.Fprintln(os.Stderr, "Init:", err)
		return 1
	}
	defer atoll.Shutdown(ctx)
	refs := make([]atoll.ObjectRef[string], 3)
	for i := range refs {
		refs[i] = printer.Remote(ctx, atoll.Value(i), atoll.Spread())
	}
	workers, err := atoll.GetAll(ctx, refs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "GetAll:", err)
		return 1
	}
	select {
	case <-watch.done:
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, "the tasks' output did not reach the driver within a minute")
		return 1
	}
	for _, w := range workers {
		fmt.Println("worker:", w)
	}
	return 0
}

// listObjectOfDriver connects this process to the cluster at addr as a
// driver, puts a 3 MiB object and checks `atoll list objects` finds it in
// the driver's store, and only it above 2 MiB.
func listObjectOfDriver(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithAddress(addr)); err != nil {
		t.Fatal(err)
	}
	defer atoll.Shutdown(ctx)
	ref, err := atoll.Put(ctx, make([]byte, 3<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Release()
	stdout, stderr, err := execute("list", "objects", "--address", addr, "--min-size", "2MiB", "--json")
	var l clusterclient.ObjectListing
	if err != nil || json.Unmarshal([]byte(stdout), &l) != nil || len(l.Objects) != 1 {
		t.Fatalf("list objects --min-size 2MiB: %v, want the driver's object\n%s%s", err, stdout, stderr)
	}
	if o := l.Objects[0]; o.ObjectID != ref.ID() || o.Size < 3<<20 || !o.Driver || o.Copy || !o.Sealed || o.OwnerID == "" {
		t.Errorf("list objects: %+v, want object %s, a primary in the driver's store, with its owner", o, ref.ID())
	}
	stdout, _, err = execute("list", "objects", "--address", addr, "--node", l.Objects[0].NodeID[:8])
	if err != nil || !regexp.MustCompile(`(?m)^`+ref.ID()[:8]+` +3MiB +`+l.Objects[0].NodeID[:8]+` \(driver\) +- `).MatchString(stdout) {
		t.Errorf("list objects --node: %v\n%s", err, stdout)
	}
}

// TestJobBinariesBounded: a node started with --job-binaries-max 1 byte
// removes, once it installs a new binary, the binaries of ended jobs
// last used over an hour ago, and keeps one whose job still runs however
// old, and the one it just installed. The binaries are shell scripts:
// each is its own content, so its own entry in the machine's directory.
func TestJobBinariesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	isolate(t)
	// The node's TMPDIR is the test's, whose state directory it reads.
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Node: nodeconfig.Config{ObjectStoreMemory: 64 << 20, JobBinariesMaxBytes: 1},
		Env: []string{"TMPDIR=" + os.TempDir()}})
	t.Setenv(nodeconfig.EnvSecret, c.Secret())
	addr := c.Address()
	dir := t.TempDir()
	script := func(name, body string) (path, stored string) {
		path = filepath.Join(dir, name)
		text := "#!/bin/sh\n" + body + "\n"
		if err := os.WriteFile(path, []byte(text), 0o700); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		return path, filepath.Join(jobs.BinariesDir(), hex.EncodeToString(sum[:]))
	}
	ended, endedDir := script("ended", "echo ended")
	running, runningDir := script("running", "echo running; exec sleep 300")
	next, nextDir := script("next", "echo next")
	waitState(t, addr, submit(t, addr, ended), "SUCCEEDED", time.Minute)
	long := submit(t, addr, running)
	waitState(t, addr, long, "RUNNING", time.Minute)
	// both last used two hours ago
	for _, d := range []string{endedDir, runningDir} {
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, addr, submit(t, addr, next), "SUCCEEDED", time.Minute)
	testutil.EventuallyWithin(t, time.Minute, "the ended job's binary removed", func() bool {
		_, err := os.Stat(endedDir)
		return errors.Is(err, fs.ErrNotExist)
	})
	for _, d := range []string{runningDir, nextDir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(d), err)
		}
	}
	if stdout, stderr, err := execute("job", "stop", "--address", addr, long); err != nil {
		t.Errorf("job stop: %v\n%s%s", err, stdout, stderr)
	}
}
