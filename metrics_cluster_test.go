package atoll_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
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

// scrapeText reads a node's /metrics as it is served.
func scrapeText(t *testing.T, addr string) []byte {
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
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", addr, err)
	}
	return body
}

// parseMetrics parses the Prometheus text format (names and labels as
// the classic format allows them).
func parseMetrics(t *testing.T, addr string, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s/metrics: not the Prometheus text format: %v\n%s", addr, err, body)
	}
	return families
}

// scrape reads a node's /metrics: the value of each sample, by metric
// name and then by its labels (name=value pairs, sorted, comma
// separated; "" without labels); histograms give their sample count.
func scrape(t *testing.T, addr string) map[string]map[string]float64 {
	t.Helper()
	families := parseMetrics(t, addr, scrapeText(t, addr))
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
	labels := append([]string{"node_id=" + nodeID}, extra...)
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
	ctx := testmain.JoinCluster(t, c)
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
		if metricOf(ms, "atoll_tasks_finished_total", n.id, "outcome=ok", "task_name=metrics.hold") > 0 {
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
			finished := metricOf(last, "atoll_tasks_finished_total", n.id, "outcome=ok", "task_name=metrics.hold")
			timed := metricOf(last, "atoll_task_duration_seconds", n.id, "task_name=metrics.hold")
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

// promMetricNames are the metrics every node serves (the head adds
// promHeadMetricNames), as the README's table lists them.
var (
	promMetricNames = []string{
		"atoll_object_store_used_bytes", "atoll_object_store_capacity_bytes", "atoll_object_store_pinned_bytes",
		"atoll_object_store_disk_used_bytes", "atoll_object_store_objects",
		"atoll_object_store_spilled_bytes_total", "atoll_object_store_restored_bytes_total",
		"atoll_raylet_queued_tasks", "atoll_raylet_running_tasks", "atoll_raylet_workers",
		"atoll_tasks_finished_total", "atoll_task_duration_seconds",
		"atoll_transfer_pulled_objects_total", "atoll_transfer_pulled_bytes_total",
		"atoll_nats_messages_total", "atoll_nats_traffic_bytes_total", "atoll_nats_reconnects_total",
	}
	promHeadMetricNames = []string{"atoll_gcs_nodes", "atoll_gcs_actors", "atoll_gcs_jobs"}
)

// promLabelName is the one style of label names: snake_case, without
// the metric's atoll_ prefix.
var promLabelName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// promFreeLabels are the labels whose values are not from a fixed set
// (ids and the program's task names); every other label's values must
// be lowercase snake_case.
var promFreeLabels = map[string]bool{"node_id": true, "task_name": true}

// promConventions are the naming rules promlint leaves out: label names
// in one style, no empty label, enumerated values in lowercase
// snake_case.
func promConventions(mf *dto.MetricFamily) []error {
	var problems []error
	bad := map[string]bool{}
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			name, value := l.GetName(), l.GetValue()
			var ps []string
			if !promLabelName.MatchString(name) || strings.HasPrefix(name, "atoll_") || strings.HasPrefix(name, "otel_") {
				ps = append(ps, fmt.Sprintf("label %q: not a plain snake_case name", name))
			}
			if value == "" {
				ps = append(ps, fmt.Sprintf("label %q is empty", name))
			} else if !promFreeLabels[name] && !promLabelName.MatchString(value) {
				ps = append(ps, fmt.Sprintf("label %s=%q: not lowercase snake_case", name, value))
			}
			for _, p := range ps {
				if !bad[p] {
					bad[p] = true
					problems = append(problems, errors.New(p))
				}
			}
		}
	}
	return problems
}

// openMetricsNames are the names a family takes in the OpenMetrics
// format: its own (a counter's without _total) and its samples'.
func openMetricsNames(mf *dto.MetricFamily) []string {
	name := mf.GetName()
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		base := strings.TrimSuffix(name, "_total")
		return []string{base, base + "_total", base + "_created"}
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return []string{name, name + "_bucket", name + "_count", name + "_sum", name + "_created", name + "_gcount", name + "_gsum"}
	case dto.MetricType_SUMMARY:
		return []string{name, name + "_count", name + "_sum", name + "_created"}
	}
	return []string{name}
}

// lintMetrics checks a /metrics text with the Prometheus text parser,
// promlint and promConventions, and that no two families clash in the
// OpenMetrics format; it returns the problems, one a line.
func lintMetrics(t *testing.T, addr string, body []byte) []string {
	t.Helper()
	families := parseMetrics(t, addr, body)
	var problems []string
	l := promlint.New(bytes.NewReader(body))
	l.AddCustomValidations(promConventions)
	ps, err := l.Lint()
	if err != nil {
		t.Fatalf("promlint %s: %v", addr, err)
	}
	for _, p := range ps {
		problems = append(problems, fmt.Sprintf("%s: %s", p.Metric, p.Text))
	}
	owner := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(families)) {
		for _, n := range openMetricsNames(families[name]) {
			if other, ok := owner[n]; ok {
				problems = append(problems, fmt.Sprintf("%s: clashes with %s under OpenMetrics (both use %s)", name, other, n))
			}
			owner[n] = name
		}
	}
	return problems
}

// TestPrometheusMetricsFollowNaming: once a 2-node cluster has run
// tasks (one failing), an actor (killed), a transfer and spills, every
// series its nodes serve passes the Prometheus text parser, promlint and
// the naming conventions promlint leaves out, and each node serves the
// documented metrics (the head its GCS's too).
func TestPrometheusMetricsFollowNaming(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 2, ObjectStoreMemory: 64 << 20, FailureTimeout: 10 * time.Second},
		Config: func(_ int, cfg *nodeconfig.Config) { cfg.MetricsPort = nodeconfig.MetricsAnyPort }})
	ctx := testmain.JoinCluster(t, c)
	n0, n1 := c.Node(0), c.Node(1)

	// An actor on node 1, called, then killed: the GCS counts it dead.
	h, err := tracedAccType.New(ctx, atoll.OnNode(n1.ID, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, tracedAdd.Remote(ctx, h, atoll.Value(1))); err != nil {
		t.Fatal(err)
	}
	if err := atoll.Kill(ctx, h); err != nil {
		t.Fatal(err)
	}
	// A task that fails, and an object made on node 0 read on node 1.
	if _, err := atoll.Get(ctx, failing.Remote(ctx, atoll.Value("on purpose"), atoll.OnNode(n1.ID, false))); err == nil {
		t.Fatal("test.failing succeeded")
	}
	made := makeBytes.Remote(ctx, atoll.Value(1<<20), atoll.OnNode(n0.ID, false))
	if _, err := atoll.Get(ctx, sumBytes.Remote(ctx, made, atoll.OnNode(n1.ID, false))); err != nil {
		t.Fatal(err)
	}
	// 72 MiB made on node 1, whose store holds 64: some spill.
	var big []atoll.ObjectRef[[]byte]
	for range 9 {
		big = append(big, makeBytes.Remote(ctx, atoll.Value(8<<20), atoll.OnNode(n1.ID, false)))
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if ready, _, err := atoll.Wait(wctx, big, atoll.NumReady(len(big)), atoll.FetchLocal(false)); err != nil || len(ready) != len(big) {
		t.Fatalf("%d of %d objects made: %v", len(ready), len(big), err)
	}

	// The failed attempt reaches node 1's task metrics once its raylet
	// records it (after the caller saw the error).
	testutil.Eventually(t, "node 1's task metrics to count a failed attempt", func() bool {
		for name, f := range parseMetrics(t, n1.MetricsAddress, scrapeText(t, n1.MetricsAddress)) {
			if !strings.Contains(name, "tasks_finished") {
				continue
			}
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if l.GetValue() == "failed" {
						return true
					}
				}
			}
		}
		return false
	})
	for i, n := range []*testcluster.Node{n0, n1} {
		body := scrapeText(t, n.MetricsAddress)
		if problems := lintMetrics(t, n.MetricsAddress, body); len(problems) > 0 {
			t.Errorf("node %d's /metrics breaks Prometheus conventions:\n  %s\n%s", i, strings.Join(problems, "\n  "), body)
		}
		families := parseMetrics(t, n.MetricsAddress, body)
		want := promMetricNames
		if i == 0 {
			want = slices.Concat(want, promHeadMetricNames)
		}
		for _, name := range want {
			if _, ok := families[name]; !ok {
				t.Errorf("node %d serves no %s", i, name)
			}
		}
		for name := range families {
			if strings.HasPrefix(name, "atoll_") && !slices.Contains(want, name) {
				t.Errorf("node %d serves %s, which the documented list lacks", i, name)
			}
		}
	}
	runtime.KeepAlive(big)
}
