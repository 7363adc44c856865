// Package otlptest is an OTLP/HTTP receiver for tests: a real HTTP server
// on 127.0.0.1 that decodes the trace and metric export requests
// OpenTelemetry's exporters send (protobuf, plain or gzip) and keeps what
// they carry, so a test can check what a program exported.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request.
const maxBody = 64 << 20

// Span is one received span with the resource it came with.
type Span struct {
	*tracepb.Span
	Resource map[string]string
}

// TraceID is the span's trace id in hex.
func (s Span) TraceID() string { return hex.EncodeToString(s.Span.TraceId) }

// SpanID is the span's id in hex.
func (s Span) SpanID() string { return hex.EncodeToString(s.Span.SpanId) }

// ParentID is the span's parent's id in hex ("" for a root).
func (s Span) ParentID() string { return hex.EncodeToString(s.ParentSpanId) }

// Attr is the span's attribute key as a string ("" if absent).
func (s Span) Attr(key string) string { return attrs(s.Attributes)[key] }

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// Endpoint is its base URL (http://127.0.0.1:port), the value for
	// OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string

	srv *http.Server

	mu      sync.Mutex
	spans   []Span
	metrics []*metricpb.ResourceMetrics
}

// Start starts a receiver on 127.0.0.1:0; it stops when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Endpoint: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var m coltracepb.ExportTraceServiceRequest
		if !decode(w, req, &m) {
			return
		}
		r.mu.Lock()
		for _, rs := range m.ResourceSpans {
			res := attrs(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, Span{Span: s, Resource: res})
				}
			}
		}
		r.mu.Unlock()
		reply(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var m colmetricpb.ExportMetricsServiceRequest
		if !decode(w, req, &m) {
			return
		}
		r.mu.Lock()
		r.metrics = append(r.metrics, m.ResourceMetrics...)
		r.mu.Unlock()
		reply(w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

func decode(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxBody)
	}
	b, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Metrics returns the resource metrics received so far.
func (r *Receiver) Metrics() []*metricpb.ResourceMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*metricpb.ResourceMetrics(nil), r.metrics...)
}

// MetricNames returns the names of the metrics received so far.
func (r *Receiver) MetricNames() map[string]bool {
	out := map[string]bool{}
	for _, rm := range r.Metrics() {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				out[m.Name] = true
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = kv.GetValue().GetStringValue()
	}
	return out
}
