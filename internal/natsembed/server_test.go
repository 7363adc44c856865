package natsembed

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m)
}

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.StoreDir == "" {
		cfg.StoreDir = t.TempDir()
	}
	srv, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func connect(t *testing.T, srv *Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := srv.Connect(opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// roundTrip checks that a request over nc reaches a responder on nc2.
func roundTrip(t *testing.T, nc, nc2 *nats.Conn) {
	t.Helper()
	sub, err := nc2.Subscribe("echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc2.Flush(); err != nil {
		t.Fatal(err)
	}
	reply, err := nc.Request("echo", []byte("ping"), 5*time.Second)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if string(reply.Data) != "ping" {
		t.Fatalf("reply %q", reply.Data)
	}
}

func TestRandomPortTCPAndInProcess(t *testing.T) {
	srv := start(t, Config{})
	url := srv.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") || strings.HasSuffix(url, ":-1") {
		t.Fatalf("ClientURL %q: want a loopback URL with a real port", url)
	}
	if _, ok := srv.Addr().(*net.TCPAddr); !ok {
		t.Fatalf("Addr %v is not a TCP address", srv.Addr())
	}
	tcp := connect(t, srv)
	if tcp.ConnectedUrl() == "" {
		t.Fatal("TCP connection has no URL")
	}
	inproc := connect(t, srv, nats.InProcessServer(srv))
	roundTrip(t, tcp, inproc)
	roundTrip(t, inproc, tcp)
}

func TestNoListenerConnectsInProcess(t *testing.T) {
	srv := start(t, Config{Port: NoListener})
	if srv.ClientURL() != "" || srv.Addr() != nil {
		t.Fatalf("no listener, but ClientURL %q Addr %v", srv.ClientURL(), srv.Addr())
	}
	a, b := connect(t, srv), connect(t, srv)
	roundTrip(t, a, b)
}

func TestJetStreamKeyValue(t *testing.T) {
	srv := start(t, Config{Port: NoListener})
	nc := connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "t", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("put: %v", err)
	}
	e, err := kv.Get(ctx, "k")
	if err != nil || string(e.Value()) != "v" {
		t.Fatalf("get: %v %v", e, err)
	}
}

// TestMaxStore: the server reserves file storage up to Config.MaxStore,
// DefaultMaxStore when unset, whatever the disk's free space (nats-server's
// own default, 75% of the free space, refused the GCS's buckets on a
// nearly full disk).
func TestMaxStore(t *testing.T) {
	const storageResourcesExceeded = 10047 // JetStream: insufficient storage resources available
	srv := start(t, Config{Port: NoListener})
	if got := srv.ns.JetStreamConfig().MaxStore; got != DefaultMaxStore {
		t.Errorf("default MaxStore = %d, want %d", got, int64(DefaultMaxStore))
	}

	srv = start(t, Config{Port: NoListener, MaxStore: 8 << 20})
	js, err := jetstream.New(connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bucket := func(name string, maxBytes int64) error {
		_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, Storage: jetstream.FileStorage, MaxBytes: maxBytes})
		return err
	}
	if err := bucket("fits", 6<<20); err != nil {
		t.Fatalf("a 6 MiB bucket under an 8 MiB limit: %v", err)
	}
	var apiErr *jetstream.APIError
	if err := bucket("over", 4<<20); !errors.As(err, &apiErr) || apiErr.ErrorCode != storageResourcesExceeded {
		t.Fatalf("a 4 MiB bucket beyond the limit: %v, want insufficient storage resources", err)
	}
}

func TestStoreSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	put := func(srv *Server) {
		nc := connect(t, srv)
		defer nc.Close()
		js, _ := jetstream.New(nc)
		kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "t", Storage: jetstream.FileStorage})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "k", []byte("kept")); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := Start(Config{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	put(srv)
	srv.Shutdown()

	srv = start(t, Config{StoreDir: dir})
	nc := connect(t, srv)
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "t")
	if err != nil {
		t.Fatalf("bucket lost across restart: %v", err)
	}
	e, err := kv.Get(ctx, "k")
	if err != nil || string(e.Value()) != "kept" {
		t.Fatalf("value lost across restart: %v %v", e, err)
	}
}

func TestShutdownIsIdempotentAndClosesClients(t *testing.T) {
	srv, err := Start(Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := srv.Connect(nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv.Shutdown()
	srv.Shutdown()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("client connection not closed by Shutdown")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{},
		{StoreDir: "x", Port: -2},
		{StoreDir: "x", Port: 70000},
		{StoreDir: "x", ServerName: "has space"},
		{StoreDir: "x", MaxMemory: -1},
		{StoreDir: "x", MaxStore: -1},
		{StoreDir: "x", ReadyTimeout: -time.Second},
		{StoreDir: "x", Token: "t", Authorize: func(string, string) (*Permissions, bool) { return nil, true }},
	} {
		if srv, err := Start(c); err == nil {
			srv.Shutdown()
			t.Errorf("Start(%+v) accepted an invalid config", c)
		}
	}
}

func TestStartErrorsInsteadOfPanicking(t *testing.T) {
	// A port that is taken: Start must return an error quickly.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	srv, err := Start(Config{StoreDir: t.TempDir(), Port: port})
	if err == nil {
		srv.Shutdown()
		t.Fatal("Start on a taken port succeeded")
	}
	t.Logf("taken port: %v", err)

	// A store directory that cannot be created.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err = Start(Config{StoreDir: filepath.Join(file, "sub"), Port: NoListener})
	if err == nil {
		srv.Shutdown()
		t.Fatal("Start with an unusable StoreDir succeeded")
	}
	t.Logf("unusable store: %v", err)
}

func TestLogsGoToSlog(t *testing.T) {
	var buf testutil.LogBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := start(t, Config{Port: NoListener, Logger: log})
	srv.Shutdown()
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "Starting nats-server") {
		t.Fatalf("server start-up was not logged at debug level:\n%s", out)
	}
}
