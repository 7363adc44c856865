package nodemetrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/nodemetrics"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

// scrape reads the node's /metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// The node's figures come from its Source when Prometheus scrapes, task
// attempts feed the task metrics, and Stop closes the port.
func TestServesTheSourcesFigures(t *testing.T) {
	ctx := context.Background()
	src := nodemetrics.Source{
		StoreStats: func(context.Context) (*atollpb.StoreStats, error) {
			return &atollpb.StoreStats{UsedBytes: 1234, CapacityBytes: 1 << 20}, nil
		},
		RayletState: func(context.Context) (*raylet.State, error) {
			return &raylet.State{Queued: 3, Running: 2, Workers: 4}, nil
		},
		Pulls: func() (uint64, uint64) { return 5, 6789 },
	}
	m, err := nodemetrics.Start(ctx, nodemetrics.Config{NodeID: ids.NewNodeID(), Port: nodeconfig.MetricsAnyPort, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			m.Stop(ctx)
		}
	}()
	now := time.Now()
	m.TaskFinished(raylet.TaskEvent{Name: "square", Start: now.Add(-time.Second), End: now})
	m.TaskFinished(raylet.TaskEvent{Name: "square", Start: now, End: now, Failed: true})
	m.TaskFinished(raylet.TaskEvent{Name: "pull", Kind: raylet.EventTransfer, Start: now, End: now}) // not a task
	body := scrape(t, m.Address())
	for _, want := range []string{
		"atoll_object_store_used_bytes{", "} 1234",
		"atoll_raylet_queued_tasks{", "} 3",
		"atoll_transfer_pulled_bytes_total{", "} 6789",
		`outcome="failed",task_name="square"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	// Only the instruments' own labels and series: no scope labels, no
	// target_info.
	for _, unwanted := range []string{"otel_scope_", "target_info", `=""`} {
		if strings.Contains(body, unwanted) {
			t.Errorf("/metrics has %q:\n%s", unwanted, body)
		}
	}
	if strings.Contains(body, `task_name="pull"`) {
		t.Errorf("a transfer counted as a task:\n%s", body)
	}
	addr := m.Address()
	m.Stop(ctx)
	stopped = true
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Errorf("%s still serves after Stop", addr)
	}
}

// A port that cannot be bound fails Start, unless BestEffort makes it a
// warning (`atoll start`'s default port).
func TestBusyPort(t *testing.T) {
	ctx := context.Background()
	src := nodemetrics.Source{
		StoreStats:  func(context.Context) (*atollpb.StoreStats, error) { return nil, errors.New("none") },
		RayletState: func(context.Context) (*raylet.State, error) { return nil, errors.New("none") },
	}
	first, err := nodemetrics.Start(ctx, nodemetrics.Config{NodeID: ids.NewNodeID(), Port: nodeconfig.MetricsAnyPort, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop(ctx)
	var port int
	if _, err := fmt.Sscanf(first.Address()[strings.LastIndexByte(first.Address(), ':')+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	if m, err := nodemetrics.Start(ctx, nodemetrics.Config{NodeID: ids.NewNodeID(), Port: port, Source: src}); err == nil {
		m.Stop(ctx)
		t.Fatalf("a second node on port %d started", port)
	}
	m, err := nodemetrics.Start(ctx, nodemetrics.Config{NodeID: ids.NewNodeID(), Port: port, BestEffort: true, Source: src})
	if err != nil {
		t.Fatalf("best effort: %v", err)
	}
	defer m.Stop(ctx)
	if m.Address() != "" {
		t.Errorf("best effort on a taken port serves at %q", m.Address())
	}
}
