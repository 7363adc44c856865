package security_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/remote"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

var square = atoll.NewFunc1("security.square", func(_ context.Context, x int) (int, error) { return x * x, nil })

// startCluster starts a head and one more node, each with one CPU. No
// test here measures failure detection: the default failure timeout
// keeps a busy driver (hashing or copying its binary under the race
// detector) from being declared dead.
func startCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	return testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 64 << 20, FailureTimeout: 5 * time.Second}})
}

// copyFile copies src to dst (mode 0700) and appends extra, streaming:
// the test binary is tens of MiB.
func copyFile(t *testing.T, src, dst, extra string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if _, err := out.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// join connects this test's driver to c with the cluster's secret.
func join(t *testing.T, c *testcluster.Cluster, opts ...atoll.Option) context.Context {
	t.Helper()
	return testmain.Init(t, 2*time.Minute, append([]atoll.Option{atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()),
		atoll.WithObjectStoreMemory(32 << 20)}, opts...)...)
}

// checkSquare runs square(7) on the cluster.
func checkSquare(ctx context.Context, t *testing.T) {
	t.Helper()
	got, err := atoll.Get(ctx, square.Remote(ctx, atoll.Value(7)))
	if err != nil || got != 49 {
		t.Fatalf("square(7) = %d, %v; want 49", got, err)
	}
}

// nodeInfo returns the GCS's record of node i of c.
func nodeInfo(t *testing.T, c *testcluster.Cluster, i int) *atollpb.NodeInfo {
	t.Helper()
	nodes, err := clusterclient.ListNodes(context.Background(), c.Address(), c.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if ids.MustFromBytes(n.NodeId).String() == c.Node(i).ID {
			return n
		}
	}
	t.Fatalf("node %d (%s) is not in the GCS", i, c.Node(i).ID)
	return nil
}

// Every message of the control plane (task specs and arguments to sniff;
// results, frees, kills, leave reports and node registrations to forge)
// goes through NATS, and NATS takes no client without the cluster's
// token: not without one, not with a guessed or another cluster's one.
// A client speaking the protocol by hand is refused before its first
// PUB is delivered.
func TestControlPlaneRefusesStrangers(t *testing.T) {
	c := startCluster(t)
	url := "nats://" + c.Address()
	other, _ := clusterkey.Generate()
	for name, opts := range map[string][]nats.Option{
		"no credentials":          nil,
		"another cluster's head":  {nats.UserInfo(cluster.HeadUser, other.NATSPassword(cluster.HeadUser))},
		"the secret as the token": {nats.Token(c.Secret())},
		"the secret as password":  {nats.UserInfo(cluster.HeadUser, c.Secret())},
		"a user and password":     {nats.UserInfo("atoll", "atoll")},
	} {
		nc, err := nats.Connect(url, append(opts, nats.NoReconnect(), nats.Timeout(10*time.Second))...)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected to the cluster's NATS", name)
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("%s: %v, want an authorization violation", name, err)
		}
	}

	// An authenticated listener on every subject (as the head's user: no
	// other role may subscribe to everything) sees none of the forged
	// messages, only its own marker.
	member := c.DialAs(cluster.HeadUser)
	var forged atomic.Int64
	marker := make(chan struct{}, 1)
	const marked = "security.marker"
	sub, err := member.Subscribe(">", func(m *nats.Msg) {
		switch {
		case m.Subject == marked:
			marker <- struct{}{}
		case strings.HasPrefix(m.Subject, "forged."), strings.HasSuffix(m.Subject, ".leave"), m.Subject == "atoll.free", m.Subject == "atoll.kill":
			forged.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := member.Flush(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", c.Address(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	leave := fmt.Sprintf("atoll.node.%s.leave", c.Node(1).ID)
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB > 1\r\nPUB forged.result 2\r\nhi\r\nPUB atoll.free 0\r\n\r\nPUB atoll.kill 0\r\n\r\nPUB %s 0\r\n\r\nPING\r\n", leave)
	reply, _ := io.ReadAll(bufio.NewReader(conn)) // the server closes the connection
	if !strings.Contains(string(reply), "Authorization Violation") || strings.Contains(string(reply), "MSG ") {
		t.Fatalf("a hand-written client got %q, want an authorization violation and no message", reply)
	}
	if err := member.Publish(marked, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-marker:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener's own marker never arrived")
	}
	if n := forged.Load(); n != 0 {
		t.Fatalf("%d forged messages were delivered", n)
	}
	for i := range c.Len() {
		if !c.Node(i).Alive() || nodeInfo(t, c, i).State != atollpb.NodeState_NODE_ALIVE {
			t.Fatalf("node %d is not alive after the attacks", i)
		}
	}
}

// A gossip member without the cluster's key (or with another one)
// cannot join the nodes' gossip.
func TestGossipRefusesStrangers(t *testing.T) {
	c := startCluster(t)
	addr := nodeInfo(t, c, 1).GossipAddress
	other, _ := clusterkey.Generate()
	for name, key := range map[string][]byte{"no key": nil, "another cluster's key": other.GossipKey()} {
		m, err := membership.Start(membership.Config{NodeID: ids.NewNodeID(), BindAddr: "127.0.0.1", SecretKey: key,
			Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		n, err := m.Join([]string{addr})
		members := len(m.Members())
		_ = m.Shutdown()
		if err == nil || n != 0 || members != 1 {
			t.Fatalf("%s: joined %d nodes (%v), sees %d members; want refused", name, n, err, members)
		}
	}
	if nodes, err := clusterclient.ListNodes(context.Background(), c.Address(), c.Credentials()); err != nil || len(nodes) != 2 {
		t.Fatalf("the GCS lists %d nodes (%v) after the attempts, want 2", len(nodes), err)
	}
}

// A transfer port serves nothing to a client without the cluster's key:
// it does not even answer "not found", while a client with the key does.
func TestTransferRefusesStrangers(t *testing.T) {
	c := startCluster(t)
	addr := nodeInfo(t, c, 1).TransferAddress
	secret, err := clusterkey.Parse(c.Secret())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := clusterkey.Generate()
	id := ids.PutObjectID(ids.NewTaskID(), 1)
	pull := func(key []byte) error {
		cl, err := remote.NewClient(remote.ClientConfig{Key: key, HandshakeTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = cl.Pull(ctx, addr, id, func(n uint64) ([]byte, error) { return make([]byte, n), nil })
		return err
	}
	if err := pull(nil); err == nil || errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a pull without the key: %v; want the connection refused, not an answer", err)
	}
	if err := pull(other.TransferKey()); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("a pull with another cluster's key: %v, want ErrUnauthenticated", err)
	}
	if err := pull(secret.TransferKey()); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a pull with the cluster's key: %v, want ErrNotFound (served, no such object)", err)
	}
}

// A node started without a worker binary runs the job's binary only as
// the driver registered it: once the file at that path changes, the
// node refuses the job's tasks instead of executing what is there now.
func TestNodeRunsOnlyTheRegisteredBinary(t *testing.T) {
	c := startCluster(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "driver")
	copyFile(t, exe, bin, "")
	ctx := join(t, c, atoll.WithWorkerBinary(bin))
	checkSquare(ctx, t) // the registered binary runs
	// Another build at the same path (a new file: the old one runs).
	copyFile(t, exe, bin+".new", "tampered")
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	_, err = atoll.Get(ctx, square.Remote(ctx, atoll.Value(7)))
	if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "another build at the same path") {
		t.Fatalf("a task after its binary changed: %v, want ErrInvalidArgument naming the hash mismatch", err)
	}
}

// Malformed messages from an authenticated peer (12 empty messages of
// every kind on a node's subjects, a flood that once stopped the gateway
// for good) leave the node serving.
func TestMalformedMessagesKeepTheNodeServing(t *testing.T) {
	c := startCluster(t)
	ctx := join(t, c)
	nc, _, err := clusterclient.Dial(c.Address(), "malformed", c.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for i := range c.Len() {
		// Not "crash" or "leave": empty, those are valid commands (kill
		// the node, by fault injection; leave it once it is idle) that
		// the secret entitles its holder to give.
		for _, kind := range []string{"task", "call", "result", "held", "cancel", "copy", "locate", "dropcopies", "replicate", "drain", "objects", "stats", "timeline"} {
			subject := fmt.Sprintf("atoll.node.%s.%s", c.Node(i).ID, kind)
			for range 12 {
				if err := nc.Publish(subject, nil); err != nil {
					t.Fatal(err)
				}
				if err := nc.Publish(subject, []byte{0xff, 0xff, 0xff}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 4 { // tasks land on both nodes
		checkSquare(ctx, t)
	}
	for i := range c.Len() {
		if !c.Node(i).Alive() || nodeInfo(t, c, i).State != atollpb.NodeState_NODE_ALIVE {
			t.Fatalf("node %d is not alive after the malformed messages", i)
		}
	}
}
