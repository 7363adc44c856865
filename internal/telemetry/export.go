package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/atoll-runtime/atoll/atollpb"
)

// OTLPConfigured reports whether the standard OTEL_EXPORTER_OTLP_*
// variables ask for an OTLP trace exporter.
func OTLPConfigured() bool {
	if strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// ProviderFromEnv builds a tracer provider exporting over OTLP as the
// standard variables say (protocol from OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// or OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", else HTTP/protobuf), its
// resource naming this process (OwnResource). The exporters read
// endpoint, headers and TLS settings from the environment themselves. It
// returns nil when OTLP is not configured.
func ProviderFromEnv(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if !OTLPConfigured() {
		return nil, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	if envProtocol() == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(OwnResource(ctx))), nil
}

func envProtocol() string {
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" {
		return p
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}

// envTrace reads OTEL_EXPORTER_OTLP_TRACES_<name>, else
// OTEL_EXPORTER_OTLP_<name>.
func envTrace(name string) string {
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
		return v
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_" + name)
}

// ExportFromEnv is this process's OTLP trace destination as the standard
// variables give it, for a job's trace contexts to carry to the nodes
// (see Inject): the endpoint URL, protocol, headers, compression and
// timeout. TLS certificate files do not travel (a node uses its own). Nil
// when OTLP is not configured or the endpoint is not a URL.
func ExportFromEnv(jobID []byte) *atollpb.TraceExport {
	if !OTLPConfigured() {
		return nil
	}
	ex := &atollpb.TraceExport{Protocol: "http/protobuf", Compression: envTrace("COMPRESSION"), JobId: jobID,
		ServiceName: os.Getenv("OTEL_SERVICE_NAME")}
	if envProtocol() == "grpc" {
		ex.Protocol = "grpc"
	}
	insecure := strings.EqualFold(envTrace("INSECURE"), "true")
	if ep := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
		ex.Endpoint = withScheme(ep, insecure)
	} else {
		ex.Endpoint = withScheme(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), insecure)
		if ex.Protocol != "grpc" { // the base URL: the signal's path is appended
			ex.Endpoint = strings.TrimSuffix(ex.Endpoint, "/") + "/v1/traces"
		}
	}
	if ms, err := strconv.ParseInt(envTrace("TIMEOUT"), 10, 64); err == nil && ms > 0 {
		ex.TimeoutMs = ms
	}
	if h := envTrace("HEADERS"); h != "" {
		ex.Headers = map[string]string{}
		for kv := range strings.SplitSeq(h, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				ex.Headers[strings.TrimSpace(k)] = dv
			}
		}
	}
	if ValidateExport(ex) != nil {
		return nil
	}
	return ex
}

// withScheme makes a gRPC endpoint given as host:port a URL.
func withScheme(ep string, insecure bool) string {
	if strings.Contains(ep, "://") {
		return ep
	}
	if insecure {
		return "http://" + ep
	}
	return "https://" + ep
}

// Bounds of a TraceExport read from the wire.
const (
	maxExportHeaders   = 32
	maxExportFieldSize = 4096
)

// ValidateExport checks a TraceExport that came from a peer: an http or
// https endpoint URL with a host, a known protocol and compression,
// bounded headers.
func ValidateExport(ex *atollpb.TraceExport) error {
	u, err := url.Parse(ex.GetEndpoint())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(ex.Endpoint) > maxExportFieldSize {
		return fmt.Errorf("trace export: endpoint %q is not an http(s) URL", ex.GetEndpoint())
	}
	if ex.Protocol != "grpc" && ex.Protocol != "http/protobuf" {
		return fmt.Errorf("trace export: protocol %q is not grpc or http/protobuf", ex.Protocol)
	}
	if ex.Compression != "" && ex.Compression != "gzip" && ex.Compression != "none" {
		return fmt.Errorf("trace export: compression %q is not gzip or none", ex.Compression)
	}
	if len(ex.Headers) > maxExportHeaders {
		return fmt.Errorf("trace export: %d headers, at most %d", len(ex.Headers), maxExportHeaders)
	}
	for k, v := range ex.Headers {
		if k == "" || len(k)+len(v) > maxExportFieldSize {
			return fmt.Errorf("trace export: header %.40q too long or empty", k)
		}
	}
	if len(ex.JobId) > 64 || len(ex.ServiceName) > 256 || ex.TimeoutMs < 0 {
		return fmt.Errorf("trace export: malformed job id, service name or timeout")
	}
	return nil
}

// exporterFor builds an exporter to a job's destination. Options given
// here override the local OTEL_EXPORTER_OTLP_* variables.
func exporterFor(ctx context.Context, ex *atollpb.TraceExport) (sdktrace.SpanExporter, error) {
	timeout := time.Duration(ex.TimeoutMs) * time.Millisecond
	if ex.Protocol == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(ex.Endpoint)}
		if len(ex.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(ex.Headers))
		}
		if ex.Compression == "gzip" {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		if timeout > 0 {
			opts = append(opts, otlptracegrpc.WithTimeout(timeout))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(ex.Endpoint)}
	if len(ex.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(ex.Headers))
	}
	if ex.Compression == "gzip" {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	} else {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	}
	if timeout > 0 {
		opts = append(opts, otlptracehttp.WithTimeout(timeout))
	}
	return otlptracehttp.New(ctx, opts...)
}

// Tracer returns atoll's tracer from tp: it starts a span on the
// provider of the job whose trace context ctx carries when that job
// exports elsewhere than this process (see Routes), else on tp.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	return routingTracer{def: tp.Tracer(TracerName)}
}

// Records reports whether tp may record spans: false for a no-op
// provider and for OTel's global provider before a program set one (its
// spans then only carry their parent's context on). A runtime whose
// provider does not record starts spans only under a valid parent: a span
// without one would carry nothing anywhere.
func Records(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return reflect.TypeOf(tp).String() != "*global.tracerProvider"
}

// ResolveProvider returns the tracer provider to use: tp if given, else
// one exporting over OTLP when the standard variables configure it (own
// is then that provider, for the caller to shut down), else OTel's global
// provider.
func ResolveProvider(ctx context.Context, tp trace.TracerProvider) (use trace.TracerProvider, own *sdktrace.TracerProvider, err error) {
	if tp != nil {
		return tp, nil, nil
	}
	if own, err = ProviderFromEnv(ctx); err != nil {
		return nil, nil, fmt.Errorf("atoll: OTLP exporter: %w", err)
	}
	if own != nil {
		return own, own, nil
	}
	return otel.GetTracerProvider(), nil, nil
}
