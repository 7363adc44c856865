package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testtls"
)

// A head generates a secret when it finds none; a node or a client that
// does not hold it cannot join or connect, whether it has none, another
// one, or goes around clusterclient.Dial with a bare NATS connection.
func TestJoinNeedsTheSecret(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no secret file of a real cluster
	head := startNode(t, nodeconfig.Config{Head: true, RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20})
	if len(head.Secret()) != 2*clusterkey.Len {
		t.Fatalf("the head's generated secret %q", head.Secret())
	}
	other, _ := clusterkey.Generate()
	for name, creds := range map[string]nodeconfig.Credentials{"no secret": {}, "another secret": {Secret: other.Hex()}} {
		n, err := node.Start(context.Background(), nodeconfig.Config{Address: head.Address(), RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20, Credentials: creds})
		if !errors.Is(err, errs.ErrUnauthenticated) {
			if n != nil {
				_ = n.Stop(context.Background())
			}
			t.Fatalf("%s: joining: %v, want ErrUnauthenticated", name, err)
		}
		if _, err := clusterclient.ListNodes(context.Background(), head.Address(), creds); !errors.Is(err, errs.ErrUnauthenticated) {
			t.Fatalf("%s: ListNodes: %v, want ErrUnauthenticated", name, err)
		}
	}
	if nc, err := nats.Connect("nats://"+head.Address(), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a NATS client without the token connected to the head")
	}
	nodes, err := clusterclient.ListNodes(context.Background(), head.Address(), nodeconfig.Credentials{Secret: head.Secret()})
	if err != nil || len(nodes) != 1 {
		t.Fatalf("ListNodes with the secret: %d nodes, %v", len(nodes), err)
	}
}

// The secret is found in the environment, then in ATOLL_SECRET_FILE,
// then in the head's file on this machine; a file others may read is
// refused.
func TestSecretSources(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	head := startNode(t, nodeconfig.Config{Head: true, RandomPorts: true, NumCPUs: nodeconfig.NoCPUs, ObjectStoreMemory: 16 << 20})
	secret, _ := clusterkey.Parse(head.Secret())
	list := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := clusterclient.ListNodes(ctx, head.Address(), nodeconfig.Credentials{})
		return err
	}
	if err := list(); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("no secret anywhere: %v, want ErrUnauthenticated", err)
	}
	t.Setenv(nodeconfig.EnvSecret, head.Secret())
	if err := list(); err != nil {
		t.Fatalf("%s: %v", nodeconfig.EnvSecret, err)
	}
	t.Setenv(nodeconfig.EnvSecret, "")
	file := filepath.Join(t.TempDir(), "secret")
	if err := clusterkey.Save(file, secret); err != nil {
		t.Fatal(err)
	}
	t.Setenv(nodeconfig.EnvSecretFile, file)
	if err := list(); err != nil {
		t.Fatalf("%s: %v", nodeconfig.EnvSecretFile, err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := list(); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a secret file others may read: %v, want ErrInvalidArgument", err)
	}
	t.Setenv(nodeconfig.EnvSecretFile, "")
	if err := nodeconfig.MakeStateDir(); err != nil {
		t.Fatal(err)
	}
	if err := clusterkey.Save(nodeconfig.SecretFile(), secret); err != nil {
		t.Fatal(err)
	}
	if err := list(); err != nil {
		t.Fatalf("the head's secret file: %v", err)
	}
	t.Setenv(nodeconfig.EnvSecret, strings.Repeat("zz", 32))
	if err := list(); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a malformed %s: %v, want ErrInvalidArgument", nodeconfig.EnvSecret, err)
	}
}

// With TLS files set, the head's NATS listener serves mutual TLS: a node
// with the certificates joins, a client without them cannot connect.
func TestTLSCluster(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	files, err := testtls.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	creds := nodeconfig.Credentials{Secret: strings.Repeat("cd", 32), TLSCert: files.Cert, TLSKey: files.Key, TLSCA: files.CA}
	head := startNode(t, nodeconfig.Config{Head: true, RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20, Credentials: creds})
	member := startNode(t, nodeconfig.Config{Address: head.Address(), RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20, Credentials: creds})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitStatus(ctx, t, head.Address(), creds, func(st *clusterclient.Status) bool {
		alive := 0
		for _, n := range st.Nodes {
			if n.Alive && (n.NodeID == head.ID().String() || n.NodeID == member.ID().String()) {
				alive++
			}
		}
		return alive == 2
	})
	plain := creds
	plain.TLSCert, plain.TLSKey, plain.TLSCA = "", "", ""
	if _, err := clusterclient.ListNodes(ctx, head.Address(), plain); err == nil {
		t.Fatal("a client without TLS listed the nodes of a TLS cluster")
	}
}
