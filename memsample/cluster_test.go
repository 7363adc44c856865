package memsample_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"google.golang.org/protobuf/proto"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/memsample"
)

func TestMain(m *testing.M) {
	if os.Getenv(raylet.EnvWorker) == "1" {
		// A raylet of these tests started this binary as a worker process
		// (their nodes have no CPUs, so none should): stay idle until
		// the raylet closes the connection, never run the tests again.
		_, _ = io.Copy(io.Discard, os.NewFile(raylet.ConnFD, "atoll-raylet"))
		os.Exit(0)
	}
	testutil.VerifyNoLeaks(m)
}

// startNode starts a node without CPUs in this process for one test.
func startNode(t *testing.T, cfg nodeconfig.Config) *node.Node {
	t.Helper()
	cfg.NumCPUs, cfg.RandomPorts, cfg.ObjectStoreMemory, cfg.FailureTimeout = nodeconfig.NoCPUs, true, 32<<20, 2*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("node.Start: %v", err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

func seriesOf(s *memsample.Samples, id ids.NodeID) *memsample.Series {
	for i := range s.Nodes {
		if s.Nodes[i].NodeID == id.String() {
			return &s.Nodes[i]
		}
	}
	return nil
}

// A sampler of a real two-node cluster (head and member in this
// process): its first sample has both nodes; an object put in the
// member's store raises the member's line and the total by its size;
// reports that do not decode or name another node are ignored; a node
// that leaves drops out of the samples.
func TestClusterSampler(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no address file of a real cluster
	head := startNode(t, nodeconfig.Config{Head: true, GCSDir: t.TempDir()})
	creds := nodeconfig.Credentials{Secret: head.Secret()}
	member := startNode(t, nodeconfig.Config{Address: head.Address(), Credentials: creds})
	nc, _, err := clusterclient.Dial(head.Address(), "test", creds)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	s, err := memsample.New(nc, memsample.Options{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	first := s.Samples()
	if len(first.Times) == 0 || len(first.Nodes) != 2 {
		t.Fatalf("first sample: %d samples, nodes %+v; want both nodes", len(first.Times), first.Nodes)
	}
	h, m := seriesOf(first, head.ID()), seriesOf(first, member.ID())
	if h == nil || m == nil || h.Role != memsample.RoleHead || m.Role != memsample.RoleWorker || first.Nodes[0].NodeID != h.NodeID {
		t.Fatalf("nodes %+v, want the head first, then the member", first.Nodes)
	}
	if !h.Present[0] || !m.Present[0] || h.Capacity[0] != 32<<20 {
		t.Fatalf("first sample: head %+v, member %+v", h, m)
	}
	base := first.Total[0]

	// Garbage, and a valid report on another node's subject: ignored.
	// Only the head's user may publish on other nodes' load subjects (a
	// node publishes its own only), so the forger connects as the head.
	secret, err := clusterkey.Parse(head.Secret())
	if err != nil {
		t.Fatal(err)
	}
	forger, err := nats.Connect("nats://"+head.Address(), nats.UserInfo(cluster.HeadUser, secret.NATSPassword(cluster.HeadUser)))
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	stranger := ids.NewNodeID()
	load, _ := proto.Marshal(&atollpb.NodeLoad{NodeId: stranger.Bytes(), StoreUsed: 1 << 40, Total: map[string]float64{"CPU": 1}})
	for subject, data := range map[string][]byte{
		cluster.DefaultPrefix + ".load." + stranger.String():        []byte("not a protobuf \xff\xff"),
		cluster.DefaultPrefix + ".load." + head.ID().String():       load,
		cluster.DefaultPrefix + ".load." + ids.NewNodeID().String(): load,
	} {
		if err := forger.Publish(subject, data); err != nil {
			t.Fatal(err)
		}
	}
	// The forger's flush: the server has routed them to the sampler's
	// connection; the sampler's flush: they reached its subscription
	// (in order, before the server's answer).
	if err := forger.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ticks := s.Progress().Ticks
	testutil.Eventually(t, "two more ticks", func() bool { return s.Progress().Ticks >= ticks+2 })

	const size = 4 << 20
	store := member.StoreClient(ids.NewWorkerID())
	obj := ids.PutObjectID(ids.NewTaskID(), 1)
	if err := store.Put(ctx, obj, atollpb.Codec_CODEC_BYTES, bytes.Repeat([]byte{7}, size)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the total to rise by the object's size", func() bool { return s.Progress().Total >= base+size })
	got := s.Samples()
	if p := seriesOf(got, member.ID()).Peak(got.Times); p.Bytes < size {
		t.Errorf("member's peak %d, want at least %d", p.Bytes, size)
	}
	if len(got.Nodes) != 2 || got.Peak().Bytes >= 1<<40 {
		t.Fatalf("a bad report was sampled: nodes %+v, peak %d", got.Nodes, got.Peak().Bytes)
	}

	// The member leaves: it drops out, its cells are empty from then on.
	if err := member.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the member to drop out", func() bool { return s.Progress().Nodes == 1 })
	ticks = s.Progress().Ticks
	testutil.Eventually(t, "one more tick", func() bool { return s.Progress().Ticks > ticks })
	final := s.Stop()
	m = seriesOf(final, member.ID())
	last := len(final.Times) - 1
	if m.Present[last] || !final.Nodes[0].Present[last] || final.Total[last] != final.Nodes[0].Used[last] {
		t.Errorf("after the member left: member present %v, total %d, head %d", m.Present[last], final.Total[last], final.Nodes[0].Used[last])
	}
	var out bytes.Buffer
	if err := final.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != len(final.Times)+1 {
		t.Fatalf("CSV: %d records, %v", len(recs), err)
	}
	wantHeader := []string{"seconds", head.ID().Short() + " (head)", member.ID().Short() + " (worker)", "total"}
	if !slices.Equal(recs[0], wantHeader) || recs[len(recs)-1][2] != "" || !strings.HasPrefix(recs[1][0], "0.000") {
		t.Errorf("CSV header %q, last line %q, first %q", recs[0], recs[len(recs)-1], recs[1])
	}
}
