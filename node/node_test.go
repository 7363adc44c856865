package node_test

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/node"
)

func TestMain(m *testing.M) {
	if os.Getenv(raylet.EnvWorker) == "1" {
		// A raylet under test started this binary as a worker process:
		// stay idle until it closes the connection (see internal/node).
		_, _ = io.Copy(io.Discard, os.NewFile(raylet.ConnFD, "atoll-raylet"))
		os.Exit(0)
	}
	testutil.VerifyNoLeaks(m)
}

// A program runs a head and a node that joins it, as `atoll start` does:
// the node joins with the secret the head generated, the cluster lists
// both, and both stop.
func TestHeadAndMember(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the state directory (address and secret files) is the test's
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	head, err := node.Start(ctx, node.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: node.NoCPUs,
		ObjectStoreMemory: 16 << 20, MetricsPort: node.MetricsAnyPort, FailureTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := head.Stop(context.Background()); err != nil {
			t.Errorf("head: Stop: %v", err)
		}
	}()
	if len(head.ID()) != 32 || head.Address() == "" || len(head.Secret()) != 64 || head.MetricsAddress() == "" || head.DashboardURL() != "" {
		t.Fatalf("head: id %q, address %q, secret %d digits, metrics %q, dashboard %q", head.ID(), head.Address(), len(head.Secret()),
			head.MetricsAddress(), head.DashboardURL())
	}
	creds := node.Credentials{Secret: head.Secret()}
	member, err := node.Start(ctx, node.Config{Address: head.Address(), Credentials: creds, RandomPorts: true, NumCPUs: 1,
		ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if member.Address() == "" || member.Secret() != head.Secret() {
		t.Errorf("member: address %q, secret %q", member.Address(), member.Secret())
	}
	nodes, err := clusterclient.ListNodes(ctx, head.Address(), creds)
	alive := 0
	for _, n := range nodes {
		if n.State == atollpb.NodeState_NODE_ALIVE {
			alive++
		}
	}
	if err != nil || len(nodes) != 2 || alive != 2 {
		t.Fatalf("the cluster lists %v, %v; want the head and the member, alive", nodes, err)
	}
	select {
	case <-member.DeclaredDead():
		t.Fatal("the member was declared dead")
	case <-member.Drained():
		t.Fatal("the member was drained")
	default:
	}
	if err := member.Stop(context.Background()); err != nil {
		t.Errorf("member: Stop: %v", err)
	}
	if err := member.Stop(context.Background()); err != nil {
		t.Errorf("member: a second Stop: %v", err)
	}
}

// Start refuses invalid settings, naming the field.
func TestStartRefusesInvalidSettings(t *testing.T) {
	_, err := node.Start(context.Background(), node.Config{Head: true, Address: "127.0.0.1:1"})
	if err == nil {
		t.Fatal("a head joining another head started")
	}
}
