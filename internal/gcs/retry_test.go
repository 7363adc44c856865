package gcs

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A GCS started before JetStream is available keeps retrying (no panic,
// no crash loop) and serves as soon as JetStream comes up.
func TestStartRetriesUntilJetStreamIsAvailable(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()
	pid := sys.Root.Spawn(mustProps(t, Config{Conn: nc, RequestTimeout: time.Second, maxRetryBackoff: 200 * time.Millisecond}))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()

	ctx := ctxT(t)
	if _, err := NewClient(nc, ClientOptions{}).ListNodes(ctx); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("GCS without JetStream answered: %v", err)
	}
	if err := ns.EnableJetStream(&natsserver.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
		t.Fatalf("enable JetStream: %v", err)
	}
	if _, err := NewClient(nc, ClientOptions{WaitForServer: true}).ListNodes(ctx); err != nil {
		t.Fatalf("GCS did not come up once JetStream did: %v", err)
	}
}

// A node registration the GCS cannot take (its store's write timed out:
// UNAVAILABLE), then one that finds no GCS serving, is sent again until
// the GCS takes it. A script stands in for the GCS at first: it answers
// the first registration with UNAVAILABLE and leaves; the real GCS
// starts after that answer.
func TestRegisterNodeRetriesWhileTheGCSIsUnavailable(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	e.stopGCS()
	n := node("n1:1")
	id, err := ids.FromBytes(n.NodeId)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	sub, err := e.nc.Subscribe(NodeRequestSubject(DefaultPrefix, id), func(m *nats.Msg) {
		data, _ := proto.Marshal(errorReply(errs.Unavailablef("gcs: store nodes/%s: context deadline exceeded", id)))
		_ = m.Respond(data)
		close(answered)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.AutoUnsubscribe(1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.client.RegisterNode(ctx, n) }()
	<-answered
	e.startGCS(Config{})
	if err := <-done; err != nil {
		t.Fatalf("RegisterNode: %v, want it registered once the GCS serves", err)
	}
	nodes, err := e.client.ListNodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].State != atollpb.NodeState_NODE_ALIVE {
		t.Fatalf("ListNodes: %v %v, want the node alive", nodes, err)
	}

	// A refusal that is not UNAVAILABLE is returned at once.
	bad := node("n2:1")
	bad.NodeId = []byte{1, 2}
	if err := e.client.RegisterNode(ctx, bad); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("RegisterNode with a bad id: %v, want INVALID_ARGUMENT", err)
	}
}

// With nobody serving, RegisterNode gives up at its context's deadline
// with the last attempt's error (UNAVAILABLE), not the context's alone.
func TestRegisterNodeGivesUpAtTheDeadline(t *testing.T) {
	e := newEnv(t)
	e.stopGCS()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := e.client.RegisterNode(ctx, node("n1:1"))
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("RegisterNode with nobody serving: %v, want UNAVAILABLE", err)
	}
}
