package node_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/atoll-runtime/atoll/internal/lockfile"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// TestDeadSessionsAreReaped: a node reaps the session directories of dead
// nodes in the temp directory (their lock file is there but nobody holds
// it, as after a kill -9), and leaves live ones and unlocked ones alone.
func TestDeadSessionsAreReaped(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string, files ...string) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dead := mk("atoll-session-dead", "session.lock", "spill/atoll-spill-0a0b0c0d-1.bin", "nats/jetstream/x")
	live := mk("atoll-session-live")
	lock, err := lockfile.Create(filepath.Join(live, "session.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	old := mk("atoll-session-nolock", "spill/atoll-spill-01020304-1.bin")
	other := mk("not-a-session", "session.lock")

	n, err := node.StartWith(t.Context(), nodeconfig.Config{ObjectStoreMemory: 16 << 20, NumCPUs: 1}, node.Hooks{InProcess: idleWorkers})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead session survived: %v", err)
	}
	for _, dir := range []string{live, old, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	own := n.SessionDir()
	if filepath.Dir(own) != tmp {
		_ = n.Stop(t.Context())
		t.Fatalf("session dir %s not in %s", own, tmp)
	}
	if _, ok, err := lockfile.Claim(filepath.Join(own, "session.lock")); ok || err != nil {
		_ = n.Stop(t.Context())
		t.Fatalf("the running node's session lock could be claimed (ok=%v, %v)", ok, err)
	}
	if err := n.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("a stopped node left its session dir: %v", err)
	}
}
