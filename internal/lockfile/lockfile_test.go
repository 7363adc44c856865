package lockfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestLiveLockCannotBeClaimed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file description: a second open in
	// this process contends like another process would.
	if _, ok, err := Claim(path); ok || err != nil {
		t.Fatalf("Claim of a held lock: ok=%v err=%v", ok, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Release left the lock file: %v", err)
	}
	if _, ok, err := Claim(path); ok || err != nil {
		t.Fatalf("Claim of a missing lock: ok=%v err=%v", ok, err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

// TestLockOfADeadProcessIsClaimed kills a process holding a lock with
// SIGKILL: the kernel drops the lock and Claim takes it.
func TestLockOfADeadProcessIsClaimed(t *testing.T) {
	if os.Getenv("LOCKFILE_HOLD") != "" {
		if _, err := Create(os.Getenv("LOCKFILE_HOLD")); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		select {} // until killed
	}
	path := filepath.Join(t.TempDir(), "dead.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockOfADeadProcessIsClaimed$")
	cmd.Env = append(os.Environ(), "LOCKFILE_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	if _, ok, _ := Claim(path); ok {
		t.Fatal("claimed the lock of a live process")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l, ok, err := Claim(path)
	if !ok || err != nil {
		t.Fatalf("Claim after the holder died: ok=%v err=%v", ok, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Release of a claim left the lock file: %v", err)
	}
}

// TestHoldIsExclusiveAndKeepsTheFile: a held lock cannot be held again
// (flock locks belong to the open file description, so a second open in
// this process contends like another process); released, the file stays
// and the next Hold takes it.
func TestHoldIsExclusiveAndKeepsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir.lock")
	l, ok, err := Hold(path)
	if !ok || err != nil {
		t.Fatalf("Hold of a new lock: ok=%v err=%v", ok, err)
	}
	if _, ok, err := Hold(path); ok || err != nil {
		t.Fatalf("Hold of a held lock: ok=%v err=%v", ok, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Release removed the held file: %v", err)
	}
	again, ok, err := Hold(path)
	if !ok || err != nil {
		t.Fatalf("Hold after Release: ok=%v err=%v", ok, err)
	}
	if err := again.Release(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Hold(filepath.Join(t.TempDir(), "no", "such", "dir.lock")); err == nil {
		t.Fatal("Hold in a missing directory: no error")
	}
}
