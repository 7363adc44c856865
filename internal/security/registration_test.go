package security_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// The GCS takes a node's registration only from that node's own
// connection, for its own id: a client (the CLI's role) registers no
// node, a node registers no other; and a registration that is never
// followed by a load report (an id a secret holder made up) expires: the
// head marks it dead, saying why, instead of listing it alive forever.
func TestRegistrationsOnlyForOneself(t *testing.T) {
	// The head checks every 4 s, not every three failure timeouts (15 s):
	// a live node reports every 100 ms.
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 64 << 20, FailureTimeout: 5 * time.Second, RejoinGrace: 4 * time.Second}})
	made, other := ids.NewNodeID(), ids.NewNodeID()
	info := func(id ids.NodeID) *atollpb.NodeInfo {
		return &atollpb.NodeInfo{NodeId: id.Bytes(), Address: "127.0.0.1:1", Hostname: "forged", Resources: map[string]float64{"CPU": 64}}
	}
	register := func(n *atollpb.NodeInfo) []byte {
		b, _ := proto.Marshal(&atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterNode{RegisterNode: n}})
		return b
	}
	// gcsError sends a request and returns the GCS's typed error.
	gcsError := func(nc *nats.Conn, subject string, body []byte) error {
		t.Helper()
		m, err := nc.Request(subject, body, 30*time.Second)
		if err != nil {
			t.Fatalf("a request on %s: %v", subject, err)
		}
		var reply atollpb.GcsReply
		if err := proto.Unmarshal(m.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error != nil {
			return errs.FromProto(reply.Error)
		}
		return nil
	}
	general := gcs.RequestSubject(cluster.DefaultPrefix)

	// A client: the GCS refuses a registration on the general subject,
	// and NATS refuses the client every node's own subject.
	client, cv := connectAs(c, cluster.ClientUser)
	if err := gcsError(client, general, register(info(made))); !errors.Is(err, atoll.ErrPermissionDenied) {
		t.Fatalf("a client's registration on %s: %v, want PERMISSION_DENIED", general, err)
	}
	own := gcs.NodeRequestSubject(cluster.DefaultPrefix, made)
	if err := client.Publish(own, register(info(made))); err != nil {
		t.Fatal(err)
	}
	cv.wait(t, "publish to", own)

	// A node: not for another id, neither on the other's subject (NATS)
	// nor on its own (the GCS).
	node, nv := connectAs(c, cluster.NodeUser(made))
	others := gcs.NodeRequestSubject(cluster.DefaultPrefix, other)
	if err := node.Publish(others, register(info(other))); err != nil {
		t.Fatal(err)
	}
	nv.wait(t, "publish to", others)
	if err := gcsError(node, own, register(info(other))); !errors.Is(err, atoll.ErrPermissionDenied) || !strings.Contains(err.Error(), "only for itself") {
		t.Fatalf("node %s registering %s on its own subject: %v, want PERMISSION_DENIED", made, other, err)
	}
	listed := func() map[string]*atollpb.NodeInfo {
		nodes, err := clusterclient.ListNodes(context.Background(), c.Address(), c.Credentials())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*atollpb.NodeInfo{}
		for _, n := range nodes {
			m[ids.MustFromBytes(n.NodeId).String()] = n
		}
		return m
	}
	if l := listed(); l[made.String()] != nil || l[other.String()] != nil {
		t.Fatalf("refused registrations are listed: %v", l)
	}

	// Its own id, on its own subject: registered, then never heard from,
	// so the head marks it dead within two of its checks.
	if err := gcsError(node, own, register(info(made))); err != nil {
		t.Fatalf("node %s registering itself: %v", made, err)
	}
	if n := listed()[made.String()]; n.GetState() != atollpb.NodeState_NODE_ALIVE {
		t.Fatalf("the registration: %v, want alive", n)
	}
	registered := time.Now()
	var dead *atollpb.NodeInfo
	testutil.EventuallyWithin(t, 2*time.Minute, "the GCS marks dead a registration never heard from", func() bool {
		n := listed()[made.String()]
		if n.GetState() == atollpb.NodeState_NODE_DEAD {
			dead = n
		}
		return dead != nil
	})
	t.Logf("a registration never heard from expired %v after it was made", time.Since(registered).Round(time.Second))
	if dead.GetLeft() || !strings.HasPrefix(dead.GetEndReason(), "registered but never heard from") {
		t.Fatalf("the expired registration: %v, want dead (not left), \"registered but never heard from...\"", dead)
	}
	// The real nodes stay alive through the checks.
	for i := range c.Len() {
		if n := nodeInfo(t, c, i); n.State != atollpb.NodeState_NODE_ALIVE {
			t.Fatalf("node %d is %v after the head's checks", i, n.State)
		}
	}
}
