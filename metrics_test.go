package atoll_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/atoll-runtime/atoll"
)

func TestNodeMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := start(t, atoll.WithMeterProvider(mp), atoll.WithObjectStoreMemory(64<<20))
	ref, err := atoll.Put(ctx, make([]byte, 4<<20))
	if err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Sum[int64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	if got["atoll.object_store.capacity"] != 64<<20 {
		t.Errorf("capacity gauge %d, want %d (all: %v)", got["atoll.object_store.capacity"], 64<<20, got)
	}
	if got["atoll.object_store.used"] < 4<<20 {
		t.Errorf("used gauge %d after a 4 MiB put", got["atoll.object_store.used"])
	}
	if got["atoll.raylet.workers"] != 2 {
		t.Errorf("workers gauge %d, want 2", got["atoll.raylet.workers"])
	}
	for _, name := range []string{"atoll.raylet.queued_tasks", "atoll.object_store.spilled_total", "atoll.object_store.disk_used"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %s metric", name)
		}
	}
	ref.Release()
}
