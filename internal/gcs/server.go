package gcs

import (
	"context"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of GCS spans.
const tracerName = "github.com/atoll-runtime/atoll/internal/gcs"

// firstRetryBackoff is the wait before the second start attempt; it
// doubles up to Config.maxRetryBackoff.
const firstRetryBackoff = 100 * time.Millisecond

// NewProps validates cfg and returns the props of a GCS actor. Spawn it
// under a supervisor; a restarted or newly spawned GCS reloads its tables
// from JetStream before it serves requests.
func NewProps(cfg Config) (*actor.Props, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return &server{cfg: cfg} }), nil
}

// server is the GCS actor. It alone owns tables and store; NATS callbacks
// only copy a request into a message for it.
type server struct {
	cfg     Config
	tables  *tables
	store   *store
	subs    []*nats.Subscription // RequestSubject, ReadSubject, NodeRequestSubject(*)
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	backoff time.Duration
	// refused counts the entries refused since refusedLogged, when the
	// last warning about them was logged.
	refused       int
	refusedLogged time.Time
}

// request is a GCS request copied out of a NATS callback.
type request struct {
	// read: it came on ReadSubject, where only reads are served.
	read bool
	// node: it came on the NodeRequestSubject of this node (hex id; ""
	// on the other subjects), where that node's registrations are served.
	node   string
	data   []byte
	header map[string][]string
	reply  string
}

// Receive implements actor.Actor.
func (s *server) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.ReceiveTimeout:
		if s.subs == nil {
			s.start(ctx)
		}
	case *request:
		s.handle(m)
	case *actor.Stopping, *actor.Restarting:
		s.stop()
	}
}

// start opens the buckets, loads the tables and subscribes. On failure it
// logs and retries after a growing backoff (the ReceiveTimeout wakes it),
// so a GCS started before JetStream is ready comes up by itself.
func (s *server) start(ctx actor.Context) {
	if err := s.open(ctx); err != nil {
		if s.backoff == 0 {
			s.backoff = firstRetryBackoff
		}
		s.cfg.Logger.Warn("gcs: start failed; retrying", "err", err, "retry_in", s.backoff)
		ctx.SetReceiveTimeout(s.backoff)
		s.backoff = min(2*s.backoff, s.cfg.maxRetryBackoff)
		return
	}
	ctx.CancelReceiveTimeout()
	s.backoff = 0
	sz := s.tables.sizes()
	s.cfg.Logger.Info("gcs: serving", "subject", RequestSubject(s.cfg.Prefix),
		"nodes", sz.Nodes, "dead_nodes", sz.DeadNodes, "actors", sz.Actors, "dead_actors", sz.DeadActors,
		"jobs", sz.Jobs, "finished_jobs", sz.FinishedJobs)
}

func (s *server) open(ctx actor.Context) error {
	tp := s.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	s.tracer = tp.Tracer(tracerName)
	s.prop = propagatorOrDefault(s.cfg.Propagator)

	c, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	st, err := openStore(c, s.cfg.Conn, s.cfg)
	if err != nil {
		return err
	}
	t, err := st.load(c, s.cfg.Logger)
	if err != nil {
		return err
	}
	t.caps = s.limits()
	s.store, s.tables = st, t
	// Caps lowered since the entries were stored, or removals that failed
	// before a restart: forget the excess now.
	s.prune(c)

	root, self := ctx.ActorSystem().Root, ctx.Self()
	nodes := nodeRequestPrefix(s.cfg.Prefix)
	for _, subject := range []string{RequestSubject(s.cfg.Prefix), ReadSubject(s.cfg.Prefix), nodes + "*"} {
		read := subject == ReadSubject(s.cfg.Prefix)
		sub, err := s.cfg.Conn.QueueSubscribe(subject, QueueGroup, func(m *nats.Msg) {
			// Never block here and never touch state: copy and hand over.
			r := &request{read: read, data: m.Data, header: cloneHeader(m.Header), reply: m.Reply}
			if node, ok := strings.CutPrefix(m.Subject, nodes); ok {
				r.node = node
			}
			root.Send(self, r)
		})
		if err != nil {
			s.stop()
			return err
		}
		s.subs = append(s.subs, sub)
	}
	// Make the interest known to the server before declaring readiness.
	if err := s.cfg.Conn.FlushTimeout(s.cfg.RequestTimeout); err != nil {
		s.cfg.Logger.Warn("gcs: flush after subscribe", "err", err)
	}
	return nil
}

// stop drains the subscriptions and waits (bounded by RequestTimeout)
// until the server has dropped the interest, so that a new GCS instance
// gets every later request. Requests still in flight are not answered;
// their callers see a timeout.
func (s *server) stop() {
	subs := s.subs
	s.subs = nil
	if len(subs) == 0 {
		return
	}
	timer := time.NewTimer(s.cfg.RequestTimeout)
	defer timer.Stop()
	for _, sub := range subs {
		closed := sub.StatusChanged(nats.SubscriptionClosed)
		if err := sub.Drain(); err != nil {
			s.cfg.Logger.Debug("gcs: drain", "subject", sub.Subject, "err", err)
			continue
		}
		select {
		case <-closed:
		case <-timer.C:
			s.cfg.Logger.Warn("gcs: subscription did not drain in time; unsubscribing", "subject", sub.Subject)
			_ = sub.Unsubscribe()
		}
	}
}

func cloneHeader(h nats.Header) map[string][]string {
	if h == nil {
		return nil
	}
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}
