package nodemetrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// ownMeterProvider makes the node's own meter provider when something
// reads it: a Prometheus exporter behind an HTTP server on
// Config.Host:Port, and an OTLP exporter when the standard
// OTEL_EXPORTER_OTLP_* variables configure one. Both nil when neither.
func ownMeterProvider(ctx context.Context, cfg Config) (*sdkmetric.MeterProvider, *metricsServer, error) {
	var opts []sdkmetric.Option
	var server *metricsServer
	if port := cfg.Port; port != 0 {
		reg := promclient.NewRegistry()
		exp, err := otelprom.New(exporterOptions(reg)...)
		if err != nil {
			return nil, nil, err
		}
		s, err := listenMetrics(cfg.Host, port, reg)
		if err != nil {
			if !cfg.BestEffort {
				_ = exp.Shutdown(ctx)
				return nil, nil, err
			}
			cfg.Logger.Warn("serving no Prometheus metrics", "err", err)
			_ = exp.Shutdown(ctx)
		} else {
			server = s
			opts = append(opts, sdkmetric.WithReader(exp))
		}
	}
	if otlpMetricsConfigured() {
		exp, err := otlpMetricExporter(ctx)
		if err != nil {
			if server != nil {
				server.close()
			}
			return nil, nil, fmt.Errorf("OTLP metrics exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if len(opts) == 0 {
		return nil, nil, nil
	}
	opts = append(opts, sdkmetric.WithResource(telemetry.OwnResource(ctx)))
	return sdkmetric.NewMeterProvider(opts...), server, nil
}

// exporterOptions make the Prometheus exporter serve conventional
// Prometheus names: dots and other characters escaped to underscores, a
// unit suffix and _total on counters (the translation strategy set, not
// deduced from the process's name validation scheme), and no labels or
// series beyond the instruments' own: no otel_scope_* labels (every
// instrument has the same scope, and its version and schema are empty)
// and no target_info (the node's identity is the node_id label).
func exporterOptions(reg promclient.Registerer) []otelprom.Option {
	return []otelprom.Option{
		otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	}
}

// otlpMetricsConfigured reports whether the standard variables ask for
// OTLP metrics.
func otlpMetricsConfigured() bool {
	if strings.EqualFold(os.Getenv("OTEL_METRICS_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

func otlpMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	proto := os.Getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto == "grpc" {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}

// Bounds of the metrics server: a scrape is small and quick.
const (
	metricsReadHeaderTimeout = 5 * time.Second
	metricsWriteTimeout      = 30 * time.Second
	metricsIdleTimeout       = 60 * time.Second
	metricsMaxHeaderBytes    = 16 << 10
)

// metricsServer serves GET /metrics from a Prometheus registry.
type metricsServer struct {
	ln   net.Listener
	srv  *http.Server
	addr string
	done chan struct{} // closed when serve's goroutine ends; nil before serve
}

func listenMetrics(host string, port int, reg *promclient.Registry) (*metricsServer, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	if port == nodeconfig.MetricsAnyPort {
		port = 0
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("metrics port: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Timeout: 20 * time.Second, MaxRequestsInFlight: 4}))
	return &metricsServer{ln: ln, addr: ln.Addr().String(), srv: &http.Server{
		Handler: mux, ReadHeaderTimeout: metricsReadHeaderTimeout, ReadTimeout: metricsReadHeaderTimeout,
		WriteTimeout: metricsWriteTimeout, IdleTimeout: metricsIdleTimeout, MaxHeaderBytes: metricsMaxHeaderBytes,
	}}, nil
}

func (s *metricsServer) serve(log *slog.Logger) {
	s.srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server", "err", err)
		}
	}()
}

// close stops the server and waits for its goroutine (if it started).
func (s *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	_ = s.ln.Close()
	if s.done == nil { // never served
		return
	}
	select {
	case <-s.done:
	case <-ctx.Done():
	}
}
