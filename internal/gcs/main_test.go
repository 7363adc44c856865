package gcs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/natsembed"
)

func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m)
}

// testEnv is one test's cluster: an embedded nats-server on a random port
// with its own store directory, a connection, an actor system, a GCS actor
// and a client. Nothing is shared between tests.
type testEnv struct {
	t      testing.TB
	dir    string
	srv    *natsembed.Server
	nc     *nats.Conn
	sys    *actor.ActorSystem
	pid    *actor.PID
	client *Client
}

// newEnv starts a cluster and waits until its GCS answers.
func newEnv(t testing.TB) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir()}
	e.startNATS()
	e.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	t.Cleanup(func() {
		e.stopGCS()
		e.sys.Shutdown()
		e.stopNATS()
	})
	e.startGCS(Config{})
	return e
}

func (e *testEnv) startNATS() {
	e.t.Helper()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: e.dir})
	if err != nil {
		e.t.Fatalf("start nats: %v", err)
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		e.t.Fatalf("connect: %v", err)
	}
	e.srv, e.nc = srv, nc
	e.client = NewClient(nc, ClientOptions{})
}

func (e *testEnv) stopNATS() {
	if e.srv == nil {
		return
	}
	e.nc.Close()
	e.srv.Shutdown()
	e.srv, e.nc = nil, nil
}

// startGCS spawns a GCS on the current connection and waits until it
// answers a request.
func (e *testEnv) startGCS(cfg Config) {
	e.t.Helper()
	cfg.Conn = e.nc
	props, err := NewProps(cfg)
	if err != nil {
		e.t.Fatalf("NewProps: %v", err)
	}
	e.pid = e.sys.Root.Spawn(props)
	waiter := NewClient(e.nc, ClientOptions{Prefix: cfg.Prefix, WaitForServer: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := waiter.ListNodes(ctx); err != nil {
		e.t.Fatalf("GCS did not come up: %v", err)
	}
}

// stopGCS stops the GCS actor and waits until it has stopped.
func (e *testEnv) stopGCS() {
	if e.pid == nil {
		return
	}
	if err := e.sys.Root.StopFuture(e.pid).Wait(); err != nil {
		e.t.Errorf("stop GCS: %v", err)
	}
	e.pid = nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
