package dashboard_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// TestDashboardConfig: the dashboard is a head's, its trace URL must be
// a link template, and a port in use fails the head's start with
// ErrUnavailable (the head stops what it started).
func TestDashboardConfig(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  nodeconfig.Config
		want string
	}{
		{"embedded", nodeconfig.Config{Dashboard: true}, "Dashboard is the head's"},
		{"joining", nodeconfig.Config{Address: "127.0.0.1:1", Dashboard: true}, "Dashboard is the head's"},
		{"port without dashboard", nodeconfig.Config{Head: true, DashboardPort: 9000}, "need node.Config.Dashboard"},
		{"bad port", nodeconfig.Config{Head: true, Dashboard: true, DashboardPort: 70000}, "DashboardPort 70000"},
		{"trace URL without placeholder", nodeconfig.Config{Head: true, Dashboard: true, DashboardTraceURL: "http://jaeger/trace"}, "{trace_id}"},
		{"trace URL not http", nodeconfig.Config{Head: true, Dashboard: true, DashboardTraceURL: "file:///{trace_id}"}, "{trace_id}"},
	} {
		n, err := node.Start(ctx, tc.cfg)
		if err == nil {
			_ = n.Stop(ctx)
		}
		if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument saying %q", tc.name, err, tc.want)
		}
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	secret, err := clusterkey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	port := busy.Addr().(*net.TCPAddr).Port
	n, err := node.Start(ctx, nodeconfig.Config{Head: true, RandomPorts: true, Dashboard: true, DashboardPort: port, NumCPUs: nodeconfig.NoCPUs,
		ObjectStoreMemory: 16 << 20, GCSDir: t.TempDir(), SessionDir: t.TempDir(), Credentials: nodeconfig.Credentials{Secret: secret.Hex()}})
	if err == nil {
		_ = n.Stop(ctx)
		t.Fatalf("a head started with its dashboard port %d in use", port)
	}
	if !errors.Is(err, atoll.ErrUnavailable) || !strings.Contains(err.Error(), strconv.Itoa(port)) || !strings.Contains(err.Error(), "--dashboard-port") {
		t.Errorf("dashboard port in use: %v, want ErrUnavailable naming the port and the way out", err)
	}
}
