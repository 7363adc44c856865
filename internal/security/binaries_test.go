package security_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// buildVersionDriver puts a build of testdata/versiondriver at bin, its
// tasks reporting version: a new file renamed over bin, as go build
// does. Each version is built once a test run (builtDrivers) and copied:
// a link of the driver is most of a test's CPU under the race detector.
func buildVersionDriver(t *testing.T, bin, version string) {
	t.Helper()
	built := builtDrivers.get(t, version)
	tmp := bin + ".build"
	copyFile(t, built, tmp, "")
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
}

// builtDrivers are the builds of testdata/versiondriver made so far, by
// version, in a directory TestMain removes.
var builtDrivers = driverBuilds{paths: map[string]string{}}

type driverBuilds struct {
	mu    sync.Mutex
	dir   string
	paths map[string]string
}

// get is the path of the build of version, made now if it was not yet.
func (b *driverBuilds) get(t *testing.T, version string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.paths[version]; ok {
		return p
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the test driver")
	}
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "atoll-security-drivers-"); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(b.dir, "driver-"+version)
	out, err := exec.Command(goTool, "build", "-ldflags", "-X main.version="+version, "-o", p, "./testdata/versiondriver").CombinedOutput()
	if err != nil {
		t.Fatalf("go build testdata/versiondriver: %v\n%s", err, out)
	}
	b.paths[version] = p
	return p
}

// remove deletes the builds.
func (b *driverBuilds) remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// startDriver starts bin as a driver of c with mode's argument; its
// standard output is returned as a line reader.
func startDriver(t *testing.T, c *testcluster.Cluster, bin, mode string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(bin, mode)
	cmd.Env = append(os.Environ(), nodeconfig.EnvAddress+"="+c.Address(), nodeconfig.EnvSecret+"="+c.Secret())
	errPath := filepath.Join(t.TempDir(), "stderr")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(errPath)
			t.Logf("driver %s's standard error:\n%s", mode, b)
		}
	})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(stdout)
}

// binaryProcesses lists the processes running bin or a copy of it (an
// executable named by its SHA-256), with what they run.
func binaryProcesses(t *testing.T, bin string) []string {
	t.Helper()
	sum := binarySum(t, bin)
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	var found []string
	for _, exe := range exes {
		target, err := os.Readlink(exe)
		if err != nil {
			continue
		}
		target = strings.TrimSuffix(target, " (deleted)")
		if target == bin || filepath.Base(target) == sum {
			found = append(found, filepath.Dir(exe)+" "+target)
		}
	}
	return found
}

// binarySum is the hex SHA-256 of the file at bin.
func binarySum(t *testing.T, bin string) string {
	t.Helper()
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// A driver rebuilt at the same path between two runs on a long-lived
// cluster: the second run's tasks run the new build, never an idle
// worker of the old one.
func TestRebuiltDriverRunsNewBuild(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 64 << 20, FailureTimeout: 5 * time.Second}})
	bin := filepath.Join(t.TempDir(), "driver")
	for _, version := range []string{"v1", "v2"} {
		buildVersionDriver(t, bin, version)
		cmd, out := startDriver(t, c, bin, "run")
		var got []string
		for out.Scan() {
			got = append(got, out.Text())
		}
		_ = cmd.Wait()
		want := strings.Repeat("version: "+version+"\n", 4)
		if s := strings.Join(got, "\n") + "\n"; s != want {
			t.Fatalf("run of build %s printed:\n%s\nwant:\n%s", version, s, want)
		}
	}
}

// After a job's driver is stopped (SIGTERM, what `atoll job stop`
// sends) while a task ignoring its context runs, and after a job ends
// on its own, no process running the job's binary (or its copy) is
// alive 5 s later.
func TestStoppedJobLeavesNoWorkers(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Node: nodeconfig.Config{NumCPUs: 2, ObjectStoreMemory: 64 << 20, FailureTimeout: 5 * time.Second}})
	bin := filepath.Join(t.TempDir(), "driver")
	buildVersionDriver(t, bin, "v1")

	cmd, out := startDriver(t, c, bin, "hold")
	if !out.Scan() || out.Text() != "holding" {
		t.Fatalf("driver printed %q, want holding", out.Text())
	}
	testutil.EventuallyWithin(t, 30*time.Second, "a worker runs the driver's binary", func() bool {
		return len(binaryProcesses(t, bin)) > 1 // the driver and a worker
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	_ = cmd.Wait()
	waitNoProcesses(t, bin, stopped, "stopped")

	cmd, out = startDriver(t, c, bin, "run")
	for out.Scan() {
	}
	ended := time.Now()
	_ = cmd.Wait()
	waitNoProcesses(t, bin, ended, "ended")
	// The node's copy of the binary went with its last job.
	copies := filepath.Join(c.Node(0).Config.SessionDir, "bin", binarySum(t, bin))
	testutil.Eventually(t, "the node's copy of the job's binary removed", func() bool {
		_, err := os.Stat(copies)
		return os.IsNotExist(err)
	})
}

// waitNoProcesses fails unless no process runs bin within 5 s of since.
func waitNoProcesses(t *testing.T, bin string, since time.Time, what string) {
	t.Helper()
	var left []string
	testutil.EventuallyWithin(t, max(time.Until(since.Add(5*time.Second)), 0), "no process running the job's binary after it "+what, func() bool {
		if left = binaryProcesses(t, bin); len(left) > 0 {
			t.Logf("job %s: still running its binary: %v", what, left)
		}
		return len(left) == 0
	})
	t.Logf("job %s: its processes were gone %v after", what, time.Since(since).Round(10*time.Millisecond))
}
