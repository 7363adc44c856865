package node_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// TestGCSDirIsKeptAndExclusive: a head keeps the GCS's state in its GCS
// directory (0700), which a second head cannot use while the first runs
// and which outlives it: a head started again on it lists the nodes the
// first one knew. By default the directory is StateDir()/gcs.
func TestGCSDirIsKeptAndExclusive(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	head := func() nodeconfig.Config {
		return nodeconfig.Config{Head: true, RandomPorts: true, NumCPUs: nodeconfig.NoCPUs, ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second}
	}
	first := startNode(t, head())
	dir := nodeconfig.DefaultGCSDir()
	if fi, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil || !fi.IsDir() {
		t.Fatalf("no JetStream store in the default GCS directory %s: %v", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("GCS directory %s: %v, %v; want mode 0700", dir, fi.Mode().Perm(), err)
	}
	second, err := node.Start(context.Background(), head())
	if second != nil {
		_ = second.Stop(context.Background())
	}
	if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "in use by another head") {
		t.Fatalf("a second head on the same GCS directory: %v, want ErrInvalidArgument (in use)", err)
	}
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	again := startNode(t, head())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := again.GCS().ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]atollpb.NodeState{}
	for _, n := range nodes {
		state[string(n.NodeId)] = n.State
	}
	if len(nodes) != 2 || state[string(first.ID().Bytes())] != atollpb.NodeState_NODE_DEAD || state[string(again.ID().Bytes())] != atollpb.NodeState_NODE_ALIVE {
		t.Fatalf("the head started again lists %v; want the first head (dead: it stopped) and itself", state)
	}

	// Elsewhere: a directory of its own, which must be this user's alone.
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := head()
	cfg.GCSDir = open
	n, err := node.Start(context.Background(), cfg)
	if n != nil {
		_ = n.Stop(context.Background())
	}
	if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("a GCS directory others may write: %v, want ErrInvalidArgument", err)
	}
}

// TestNodesRegisterAgainWithANewHead: a head stops and another starts on
// its address with a GCS that never heard of the cluster (a fresh GCS
// directory): the node still running reconnects, registers again and is
// listed alive, and its node process is not declared dead.
func TestNodesRegisterAgainWithANewHead(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	creds := nodeconfig.Credentials{Secret: strings.Repeat("5a", 32)} // both heads hold it
	first, err := node.Start(context.Background(), nodeconfig.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: nodeconfig.NoCPUs,
		ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	member := startNode(t, nodeconfig.Config{Address: first.Address(), RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second,
		Credentials: creds})
	_, port, _ := strings.Cut(first.Address(), ":")
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	second := startNode(t, nodeconfig.Config{Head: true, GCSDir: t.TempDir(), Port: p, RandomPorts: true, NumCPUs: nodeconfig.NoCPUs,
		ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second, Credentials: creds})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes []*atollpb.NodeInfo
	testutil.Eventually(t, "the new head to list the member alive", func() bool {
		nodes, err = second.GCS().ListNodes(ctx)
		for _, n := range nodes {
			if string(n.NodeId) == string(member.ID().Bytes()) {
				return n.State == atollpb.NodeState_NODE_ALIVE
			}
		}
		return false
	})
	select {
	case <-member.DeclaredDead():
		t.Fatal("the member was declared dead")
	default:
	}
	if len(nodes) != 2 {
		t.Errorf("the new head lists %d nodes, want itself and the member", len(nodes))
	}
}

// TestFailedStartLeavesNoRecord: a head whose metrics port is taken
// fails to start, and the head started next in the same GCS directory
// lists only itself (no dead head from the failed start).
func TestFailedStartLeavesNoRecord(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := nodeconfig.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: nodeconfig.NoCPUs, ObjectStoreMemory: 16 << 20,
		NodeIP: "127.0.0.1", MetricsPort: taken.Addr().(*net.TCPAddr).Port}
	failed, err := node.Start(context.Background(), cfg)
	if failed != nil {
		_ = failed.Stop(context.Background())
	}
	if err == nil {
		t.Fatal("a head started on a taken metrics port")
	}
	cfg.MetricsPort = 0
	head := startNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := head.GCS().ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || !bytes.Equal(nodes[0].NodeId, head.ID().Bytes()) {
		t.Fatalf("the head started after a failed start lists %d nodes, want only itself: %v", len(nodes), nodes)
	}
}
