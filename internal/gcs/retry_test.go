package gcs

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/errs"
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
