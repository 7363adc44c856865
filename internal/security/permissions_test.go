package security_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// violations records the permission violations the server reports to one
// connection (asynchronously, as NATS does).
type violations struct {
	mu   sync.Mutex
	errs []string
	more chan struct{}
}

func newViolations() *violations { return &violations{more: make(chan struct{}, 1)} }

func (v *violations) option() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if !errors.Is(err, nats.ErrPermissionViolation) {
			return
		}
		v.mu.Lock()
		v.errs = append(v.errs, err.Error())
		v.mu.Unlock()
		select {
		case v.more <- struct{}{}:
		default:
		}
	})
}

// wait waits until the server refused subject to the connection
// ("Publish to" or "Subscription to" in the message).
func (v *violations) wait(t *testing.T, what, subject string) {
	t.Helper()
	want := strings.ToLower(fmt.Sprintf("%s %q", what, subject))
	deadline := time.After(30 * time.Second)
	for {
		v.mu.Lock()
		for _, e := range v.errs {
			if strings.Contains(strings.ToLower(e), want) {
				v.mu.Unlock()
				return
			}
		}
		got := append([]string(nil), v.errs...)
		v.mu.Unlock()
		select {
		case <-v.more:
		case <-deadline:
			t.Fatalf("no permissions violation for %s; got %q", want, got)
		}
	}
}

// connectAs connects to c's NATS as user with the password c's secret
// derives for it, recording its permission violations.
func connectAs(c *testcluster.Cluster, user string) (*nats.Conn, *violations) {
	v := newViolations()
	return c.DialAs(user, v.option()), v
}

// forgedBody is the body of every message a test forges.
const forgedBody = "forged by the test"

// watch subscribes a head connection to every subject and counts the
// forged messages (forgedBody) on each; marker's arrival says the server has
// routed everything published before it by the same connection.
type watch struct {
	mu     sync.Mutex
	seen   map[string]int
	marker chan struct{}
}

func startWatch(t *testing.T, c *testcluster.Cluster, marker string) *watch {
	t.Helper()
	w := &watch{seen: map[string]int{}, marker: make(chan struct{}, 16)}
	nc := c.DialAs(cluster.HeadUser)
	if _, err := nc.Subscribe(">", func(m *nats.Msg) {
		if string(m.Data) == forgedBody { // the nodes' own messages go on some of these subjects too
			w.mu.Lock()
			w.seen[m.Subject]++
			w.mu.Unlock()
		}
		if m.Subject == marker {
			select {
			case w.marker <- struct{}{}:
			default: // one waiting is enough
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *watch) waitMarker(t *testing.T) {
	t.Helper()
	select {
	case <-w.marker:
	case <-time.After(30 * time.Second):
		t.Fatal("the marker never arrived")
	}
}

func (w *watch) count(subject string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[subject]
}

// Each role of the head's NATS gets its own subjects. A reader (the
// reader token alone, no secret) sees the cluster and changes nothing:
// every change it tries is refused by the server and never reaches a
// node, and a change sent where reads go gets PERMISSION_DENIED from the
// GCS. A node's connection publishes its own load report only and reads
// its own subjects only; no client reads another's replies.
func TestRolePermissions(t *testing.T) {
	c := startCluster(t)
	ctx := join(t, c)
	checkSquare(ctx, t)
	secret, err := clusterkey.Parse(c.Secret())
	if err != nil {
		t.Fatal(err)
	}
	target := c.Node(1).ID
	readSubject := gcs.ReadSubject(cluster.DefaultPrefix)

	t.Run("reader", func(t *testing.T) {
		creds := nodeconfig.Credentials{ReaderToken: secret.NATSPassword(cluster.ReaderUser)}
		st, err := clusterclient.GetStatus(context.Background(), c.Address(), creds)
		if err != nil {
			t.Fatalf("a reader's status: %v", err)
		}
		if len(st.Nodes) < c.Len() {
			t.Fatalf("a reader sees %d nodes, want at least %d", len(st.Nodes), c.Len())
		}
		if _, err := clusterclient.ListNodes(context.Background(), c.Address(), nodeconfig.Credentials{ReaderToken: "00" + creds.ReaderToken[2:]}); !errors.Is(err, atoll.ErrUnauthenticated) {
			t.Fatalf("a wrong reader token: %v, want ErrUnauthenticated", err)
		}

		// A command with the reader token that asks for a change fails at
		// once, not at its deadline: its connection is closed on the
		// server's refusal, with ErrPermissionDenied saying why.
		rc, _, err := clusterclient.Dial(c.Address(), "reader-command", creds)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		start := time.Now()
		if _, err := rc.Request("atoll.amm.control", nil, time.Minute); err == nil {
			t.Fatal("a reader's AMM control request was answered")
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("a reader's refused request took %v to fail", d)
		}
		if err := clusterclient.LastPermissionViolation(); !errors.Is(err, atoll.ErrPermissionDenied) || !strings.Contains(err.Error(), "atoll.amm.control") {
			t.Fatalf("LastPermissionViolation = %v, want ErrPermissionDenied naming atoll.amm.control", err)
		}

		marker := "atoll.node." + ids.NewNodeID().String() + ".stats" // a reader may ask any node's stats
		w := startWatch(t, c, marker)
		nc, v := connectAs(c, cluster.ReaderUser)
		changes := []string{
			"atoll.free", "atoll.kill", "atoll.owners.exited", "atoll.load." + target, gcs.RequestSubject(cluster.DefaultPrefix),
			"atoll.node." + target + ".task", "atoll.node." + target + ".result", "atoll.node." + target + ".leave",
			"atoll.node." + target + ".crash", "atoll.node." + target + ".drain", "atoll.amm.control",
		}
		for _, s := range changes {
			if err := nc.Publish(s, []byte(forgedBody)); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range []string{">", "atoll.node." + target + ".task", "_INBOX.>", "_INBOX.client.>"} {
			if _, err := nc.SubscribeSync(s); err != nil {
				t.Fatal(err)
			}
		}
		// A change sent where reads go: the GCS refuses it.
		b, _ := proto.Marshal(&atollpb.GcsRequest{Op: &atollpb.GcsRequest_MarkNodeDead{MarkNodeDead: &atollpb.MarkNodeDead{NodeId: mustHex(t, target)}}})
		m, err := nc.Request(readSubject, b, 30*time.Second)
		if err != nil {
			t.Fatalf("a request on %s: %v", readSubject, err)
		}
		var reply atollpb.GcsReply
		if err := proto.Unmarshal(m.Data, &reply); err != nil || reply.GetError().GetCode() != atollpb.ErrorCode_PERMISSION_DENIED {
			t.Fatalf("MarkNodeDead on the read subject: %v, %v; want PERMISSION_DENIED", reply.GetError(), err)
		}
		// A read-only view: a node's log (the dashboard's logs view).
		lb, _ := proto.Marshal(&atollpb.NodeLogRequest{MaxBytes: 1024})
		lm, err := nc.Request("atoll.node."+target+".logs", lb, 30*time.Second)
		if err != nil {
			t.Fatalf("a reader's log request: %v", err)
		}
		var nl atollpb.NodeLog
		if err := proto.Unmarshal(lm.Data, &nl); err != nil || nl.GetFile() != c.Node(1).LogFile || len(nl.GetData()) == 0 {
			t.Fatalf("a reader's log request: %s (%d bytes), %v; want the end of %s", nl.GetFile(), len(nl.GetData()), err, c.Node(1).LogFile)
		}
		if err := nc.Publish(marker, nil); err != nil {
			t.Fatal(err)
		}
		w.waitMarker(t)
		for _, s := range changes {
			v.wait(t, "publish to", s)
			if n := w.count(s); n != 0 {
				t.Errorf("%d messages a reader published on %s were delivered", n, s)
			}
		}
		for _, s := range []string{">", "atoll.node." + target + ".task", "_INBOX.>", "_INBOX.client.>"} {
			v.wait(t, "subscription to", s)
		}
		if n := nodeInfo(t, c, 1); n.State != atollpb.NodeState_NODE_ALIVE {
			t.Fatalf("node 1 is %v after the reader's attempts", n.State)
		}
	})

	t.Run("node", func(t *testing.T) {
		// A node's connection (here a made-up node's: deriving its
		// password takes the secret) may publish its own load report,
		// not another node's, and read its own subjects only.
		self := ids.NewNodeID()
		own := "atoll.load." + self.String()
		w := startWatch(t, c, own)
		nc, v := connectAs(c, cluster.NodeUser(self))
		forged := "atoll.load." + target
		if err := nc.Publish(forged, []byte(forgedBody)); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"atoll.node." + target + ".task", "atoll.node." + target + ".>", "_INBOX.>", ">"} {
			if _, err := nc.SubscribeSync(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Publish(own, nil); err != nil {
			t.Fatal(err)
		}
		w.waitMarker(t)
		v.wait(t, "publish to", forged)
		if n := w.count(forged); n != 0 {
			t.Fatalf("a load report forged for node %s was delivered %d times", target, n)
		}
		for _, s := range []string{"atoll.node." + target + ".task", "atoll.node." + target + ".>", "_INBOX.>", ">"} {
			v.wait(t, "subscription to", s)
		}
	})

	t.Run("strangers", func(t *testing.T) {
		// Names that are no role, or a node user that names no node id.
		for _, user := range []string{"node.", "node.xyz", "node." + strings.Repeat("0", 32), "admin", "Head"} {
			_, err := nats.Connect("nats://"+c.Address(), nats.UserInfo(user, secret.NATSPassword(user)), nats.NoReconnect(), nats.Timeout(10*time.Second))
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("user %q: %v, want an authorization violation", user, err)
			}
		}
	})
	checkSquare(ctx, t)
}

// A head started without fault injection refuses it: KillNode and
// PartitionNode fail at once with ErrPermissionDenied, and a crash
// request published by hand never reaches the node.
func TestFaultInjectionNeedsTheHead(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 64 << 20, FailureTimeout: 5 * time.Second},
		NoFaultInjection: true})
	ctx := join(t, c)
	target := c.Node(1).ID
	start := time.Now()
	if err := atolltest.KillNode(ctx, target); !errors.Is(err, atoll.ErrPermissionDenied) {
		t.Fatalf("KillNode: %v, want ErrPermissionDenied", err)
	}
	if err := atolltest.PartitionNode(ctx, target, "both", 5*time.Second); !errors.Is(err, atoll.ErrPermissionDenied) {
		t.Fatalf("PartitionNode: %v, want ErrPermissionDenied", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the refusals took %v", d)
	}
	crash := "atoll.node." + target + ".crash"
	w := startWatch(t, c, "atoll.load."+target)
	for _, user := range []string{cluster.ClientUser, cluster.NodeUser(ids.NewNodeID())} {
		nc, v := connectAs(c, user)
		if err := nc.Publish(crash, []byte(forgedBody)); err != nil {
			t.Fatal(err)
		}
		v.wait(t, "publish to", crash)
	}
	w.waitMarker(t) // node 1 still reports its load
	if n := w.count(crash); n != 0 {
		t.Fatalf("%d crash requests were delivered", n)
	}
	if !c.Node(1).Alive() {
		t.Fatal("node 1 died")
	}
	checkSquare(ctx, t)
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	id, err := ids.FromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id.Bytes()
}
