package atoll_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// metricsHold waits until the file release exists, then returns n bytes
// (stored in its node's object store).
var metricsHold = atoll.NewFunc1("metrics.hold", func(ctx context.Context, a metricsHoldArg) ([]byte, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(a.Release); err == nil {
			return make([]byte, a.Size), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
})

type metricsHoldArg struct {
	Release string
	Size    int
}

// scrape reads a node's /metrics: the value of each sample, by metric
// name and then by its labels (name=value pairs, sorted, comma
// separated; "" without labels); histograms give their sample count.
func scrape(t *testing.T, addr string) map[string]map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s/metrics: not the Prometheus text format: %v", addr, err)
	}
	out := map[string]map[string]float64{}
	for name, f := range families {
		out[name] = map[string]float64{}
		for _, m := range f.Metric {
			out[name][labelKey(m)] = sampleValue(f.GetType(), m)
		}
	}
	return out
}

func labelKey(m *dto.Metric) string {
	key := ""
	for _, l := range m.Label {
		if l.GetName() == "otel_scope_name" || l.GetName() == "otel_scope_version" || l.GetName() == "otel_scope_schema_url" {
			continue
		}
		if key != "" {
			key += ","
		}
		key += l.GetName() + "=" + l.GetValue()
	}
	return key
}

func sampleValue(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// metricOf is the value of the sample of metric name whose labels are
// the node's id and extra ("name=value"), or -1 if there is none.
func metricOf(ms map[string]map[string]float64, name, nodeID string, extra ...string) float64 {
	labels := append([]string{"atoll_node_id=" + nodeID}, extra...)
	slices.Sort(labels)
	if v, ok := ms[name][strings.Join(labels, ",")]; ok {
		return v
	}
	return -1
}

// TestPrometheusMetricsMoveDuringAJob: every node of a 3-node cluster
// serves /metrics; while a job's tasks run there the raylet's running
// tasks rise, once they finish the store holds their results and the
// task counter and latency histogram count them.
func TestPrometheusMetricsMoveDuringAJob(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 10 * time.Second},
		Config: func(_ int, cfg *nodeconfig.Config) { cfg.MetricsPort = nodeconfig.MetricsAnyPort }})
	ctx := joinCluster(t, c)
	const perNode, size = 2, 3 << 20
	type nodeAt struct{ id, addr string }
	var nodes []nodeAt
	for i := range c.Len() {
		n := c.Node(i)
		if n.MetricsAddress == "" {
			t.Fatalf("node %d serves no metrics", i)
		}
		nodes = append(nodes, nodeAt{n.ID, n.MetricsAddress})
	}
	before := map[string]float64{}
	for _, n := range nodes {
		ms := scrape(t, n.addr)
		for _, name := range []string{"atoll_object_store_capacity_bytes", "atoll_raylet_workers", "atoll_nats_messages_total"} {
			if len(ms[name]) == 0 {
				t.Fatalf("node %s: no %s in /metrics", n.id, name)
			}
		}
		if v := metricOf(ms, "atoll_raylet_running_tasks", n.id); v != 0 {
			t.Fatalf("node %s: %v running tasks before the job", n.id, v)
		}
		before[n.id] = metricOf(ms, "atoll_object_store_used_bytes", n.id)
		if metricOf(ms, "atoll_tasks_finished_total", n.id, "atoll_outcome=ok", "atoll_task_name=metrics.hold") > 0 {
			t.Fatalf("node %s counts metrics.hold before it ran", n.id)
		}
	}

	release := filepath.Join(t.TempDir(), "release")
	var refs []atoll.ObjectRef[[]byte]
	for _, n := range nodes {
		for range perNode {
			refs = append(refs, metricsHold.Remote(ctx, atoll.Value(metricsHoldArg{Release: release, Size: size}), atoll.OnNode(n.id, false)))
		}
	}
	for _, n := range nodes {
		testutil.EventuallyWithin(t, 30*time.Second, fmt.Sprintf("node %s's /metrics to show its tasks running", n.id), func() bool {
			return metricOf(scrape(t, n.addr), "atoll_raylet_running_tasks", n.id) == perNode
		})
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(20 * time.Millisecond)
		for {
			last := scrape(t, n.addr)
			running := metricOf(last, "atoll_raylet_running_tasks", n.id)
			used := metricOf(last, "atoll_object_store_used_bytes", n.id)
			finished := metricOf(last, "atoll_tasks_finished_total", n.id, "atoll_outcome=ok", "atoll_task_name=metrics.hold")
			timed := metricOf(last, "atoll_task_duration_seconds", n.id, "atoll_task_name=metrics.hold")
			if running == 0 && used >= before[n.id]+perNode*size && finished == perNode && timed == perNode {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s after the job: %v running tasks, %v bytes used (%v before), %v finished, %v timed; want 0, +%d, %d, %d (tasks: %v; durations: %v)",
					n.id, running, used, before[n.id], finished, timed, perNode*size, perNode, perNode,
					last["atoll_tasks_finished_total"], last["atoll_task_duration_seconds"])
			}
			<-tick.C
		}
		tick.Stop()
	}
	runtime.KeepAlive(refs) // the results stay in the nodes' stores until here
}
