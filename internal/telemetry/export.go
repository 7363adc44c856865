package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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
// or OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", else HTTP/protobuf). The
// exporters read endpoint, headers and TLS settings from the environment
// themselves. It returns nil when OTLP is not configured.
func ProviderFromEnv(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if !OTLPConfigured() {
		return nil, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp)), nil
}

// Tracer returns atoll's tracer from tp.
func Tracer(tp trace.TracerProvider) trace.Tracer { return tp.Tracer(TracerName) }

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
