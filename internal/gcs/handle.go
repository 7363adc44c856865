package gcs

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// handle serves one request inside the actor: decode, trace, apply,
// write through, publish the event, reply.
func (s *server) handle(r *request) {
	req := &atollpb.GcsRequest{}
	var reply *atollpb.GcsReply
	op := "invalid"
	if err := proto.Unmarshal(r.data, req); err != nil {
		reply = errorReply(errs.Invalidf("gcs: undecodable request: %v", err))
	} else {
		op = opName(req)
		if r.read && !readOnly(req) {
			reply = errorReply(errs.PermissionDeniedf("gcs: %s changes the tables; it is not served on %s", op, ReadSubject(s.cfg.Prefix)))
		} else if err := s.checkNodeSubject(r, req, op); err != nil {
			reply = errorReply(err)
		}
	}

	ctx := s.prop.Extract(context.Background(), natsHeaderCarrier(r.header))
	ctx, span := s.tracer.Start(ctx, "gcs "+op,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.destination.name", RequestSubject(s.cfg.Prefix)),
			attribute.String("rpc.method", op),
		))
	if reply == nil {
		reply = s.dispatch(ctx, req)
	}
	if e := reply.GetError(); e != nil {
		span.SetStatus(codes.Error, e.GetMessage())
		span.SetAttributes(attribute.String("atoll.error_code", e.GetCode().String()))
	}
	// End before replying, so the span is recorded by the time the caller
	// has its answer.
	span.End()
	s.respond(r.reply, reply)
}

// checkNodeSubject refuses a registration that did not come on the
// NodeRequestSubject of the node it registers (only that node's user may
// publish there), and on a NodeRequestSubject anything but that node's
// registrations and its own MarkNodeDead.
func (s *server) checkNodeSubject(r *request, req *atollpb.GcsRequest, op string) error {
	if r.node == "" {
		if nodeOnly(req) {
			return errs.PermissionDeniedf("gcs: %s is served only on the registering node's own subject (%s<node id>)", op, nodeRequestPrefix(s.cfg.Prefix))
		}
		return nil
	}
	id, err := ids.FromBytes(requestNode(req))
	if err != nil || id.String() != r.node {
		if !nodeOnly(req) && requestNode(req) == nil {
			return errs.PermissionDeniedf("gcs: %s is not served on a node's own subject (%s%s)", op, nodeRequestPrefix(s.cfg.Prefix), r.node)
		}
		return errs.PermissionDeniedf("gcs: %s of node %x came on the subject of node %s: a node speaks only for itself", op, requestNode(req), r.node)
	}
	return nil
}

// dispatch applies one request to the tables and returns the reply.
func (s *server) dispatch(ctx context.Context, req *atollpb.GcsRequest) *atollpb.GcsReply {
	now := s.cfg.now().UnixMilli()
	t := s.tables
	nodeEvents, actorEvents := NodeEventsSubject(s.cfg.Prefix), ActorEventsSubject(s.cfg.Prefix)
	var err error
	switch op := req.Op.(type) {
	case *atollpb.GcsRequest_RegisterNode:
		err = writeThrough(ctx, s, s.store.nodes, func() (string, *atollpb.NodeInfo, error) { return t.checkRegisterNode(op.RegisterNode, now) }, t.putNode, nodeEvents)
	case *atollpb.GcsRequest_ReregisterNode:
		err = writeThrough(ctx, s, s.store.nodes, func() (string, *atollpb.NodeInfo, error) { return t.checkReregisterNode(op.ReregisterNode, now) }, t.putNode, nodeEvents)
	case *atollpb.GcsRequest_MarkNodeDead:
		err = writeThrough(ctx, s, s.store.nodes, func() (string, *atollpb.NodeInfo, error) { return t.checkMarkNodeDead(op.MarkNodeDead, now) }, t.putNode, nodeEvents)
		if err == nil {
			err = s.actorsDied(ctx, op.MarkNodeDead.GetNodeId(), actorEvents)
		}
	case *atollpb.GcsRequest_ListNodes:
		nodes, more, err := t.listNodes(op.ListNodes.GetPage(), s.pageBytes())
		if err != nil {
			return errorReply(err)
		}
		return &atollpb.GcsReply{Nodes: nodes, More: more}
	case *atollpb.GcsRequest_RegisterActor:
		err = writeThrough(ctx, s, s.store.actors, func() (string, *atollpb.ActorInfo, error) { return t.checkRegisterActor(op.RegisterActor) }, t.putActor, actorEvents)
	case *atollpb.GcsRequest_UpdateActor:
		err = writeThrough(ctx, s, s.store.actors, func() (string, *atollpb.ActorInfo, error) { return t.checkUpdateActor(op.UpdateActor) }, t.putActor, actorEvents)
	case *atollpb.GcsRequest_GetActor:
		a, err := t.getActor(op.GetActor)
		if err != nil {
			return errorReply(err)
		}
		return &atollpb.GcsReply{Actors: []*atollpb.ActorInfo{a}}
	case *atollpb.GcsRequest_GetNamedActor:
		a, err := t.getNamedActor(op.GetNamedActor.GetNamespace(), op.GetNamedActor.GetName())
		if err != nil {
			return errorReply(err)
		}
		return &atollpb.GcsReply{Actors: []*atollpb.ActorInfo{a}}
	case *atollpb.GcsRequest_ListActors:
		actors, more, err := t.listActors(op.ListActors, s.pageBytes())
		if err != nil {
			return errorReply(err)
		}
		return &atollpb.GcsReply{Actors: actors, More: more}
	case *atollpb.GcsRequest_AddJob:
		err = writeThrough(ctx, s, s.store.jobs, func() (string, *atollpb.JobInfo, error) { return t.checkAddJob(op.AddJob, now) }, t.putJob, "")
	case *atollpb.GcsRequest_FinishJob:
		err = writeThrough(ctx, s, s.store.jobs, func() (string, *atollpb.JobInfo, error) { return t.checkFinishJob(op.FinishJob, now) }, t.putJob, "")
	case *atollpb.GcsRequest_ListJobs:
		jobs, more, err := t.listJobs(op.ListJobs.GetPage(), s.pageBytes())
		if err != nil {
			return errorReply(err)
		}
		return &atollpb.GcsReply{Jobs: jobs, More: more}
	default:
		err = errs.Invalidf("gcs: request has no known op")
	}
	// A death or a finished job may take a table past its cap (even when
	// a later step failed: what was written stays written).
	s.prune(ctx)
	if err != nil {
		return errorReply(err)
	}
	return &atollpb.GcsReply{}
}

// actorsDied writes the new entries of the actors still live on a dead
// node (tables.actorsOn): every one of them, past any that fails, so that
// one failed write leaves no other actor ALIVE at the dead node's
// address. It returns nil if every write succeeded, else UNAVAILABLE,
// with the count, if any failure is (a retry may succeed), else the first
// failure (a refusal no retry changes). The writes share one request
// timeout; those it leaves no time for are not tried and count as
// UNAVAILABLE. The node is dead already, so its death reported again (the
// reporter retries while it gets UNAVAILABLE) writes the actors still
// left there, and only those.
func (s *server) actorsDied(ctx context.Context, node []byte, event string) error {
	// One request timeout for them all: a store that stopped answering
	// must not hold the GCS for one timeout per actor.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var first, retry error
	next := s.tables.actorsOn(node)
	failed := 0
	for _, a := range next {
		if ctx.Err() != nil {
			failed++
			if retry == nil {
				retry = errs.Unavailablef("gcs: no time left to write them: %v", ctx.Err())
			}
			first = cmp.Or(first, retry)
			continue
		}
		err := writeThrough(ctx, s, s.store.actors, func() (string, *atollpb.ActorInfo, error) { return s.tables.checkUpdateActor(a) }, s.tables.putActor, event)
		if err == nil {
			continue
		}
		failed++
		if first == nil {
			first = err
		}
		if retry == nil && errors.Is(err, errs.ErrUnavailable) {
			retry = err
		}
	}
	if failed == 0 {
		return nil
	}
	s.cfg.Logger.Warn("gcs: a dead node's actors not all updated", "node", hex.EncodeToString(node), "failed", failed, "of", len(next), "err", first)
	if retry != nil {
		return errs.Unavailablef("gcs: node %x is dead, but %d of the %d actors it hosted are not updated yet (mark it dead again): %v", node, failed, len(next), retry)
	}
	return first
}

// prune forgets the dead nodes, dead actors and finished jobs past the
// caps, oldest first: from KV, then from memory. A failed removal is
// logged and the entry forgotten in memory all the same (memory stays
// bounded); a restarted GCS finds it in KV and prunes it again.
func (s *server) prune(ctx context.Context) {
	victims := s.tables.overCap(s.limits())
	if len(victims) == 0 {
		return
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	for _, v := range victims {
		if err := s.store.remove(c, s.store.bucket(v.table), v.key); err != nil {
			s.cfg.Logger.Warn("gcs: removing a forgotten entry from KV failed; it is pruned again on the next start",
				"table", v.table.String(), "key", v.key, "err", err)
		}
		s.tables.drop(v)
	}
	s.cfg.Logger.Debug("gcs: forgot the oldest dead entries past the caps", "count", len(victims))
}

func (s *server) limits() limits {
	return limits{DeadNodes: s.cfg.MaxDeadNodes, DeadActors: s.cfg.MaxDeadActors, FinishedJobs: s.cfg.MaxFinishedJobs,
		Nodes: s.cfg.MaxNodes, Actors: s.cfg.MaxActors, Jobs: s.cfg.MaxJobs,
		Bytes: [numTables]int64{budget(s.cfg.NodesBucketBytes), budget(s.cfg.ActorsBucketBytes), budget(s.cfg.JobsBucketBytes)},
		Entry: s.cfg.MaxEntryBytes}
}

// writeThrough checks a change, writes it through to KV, applies it to the
// tables and publishes it on event (if any). Memory changes only after the
// write succeeded; a check that returns no entry is a no-op.
func writeThrough[M proto.Message](ctx context.Context, s *server, kv jetstream.KeyValue, check func() (string, M, error), apply func(string, M), event string) error {
	k, next, err := check()
	if errors.Is(err, errs.ErrResourceExhausted) {
		s.logRefused(err)
	}
	if err != nil || !next.ProtoReflect().IsValid() {
		return err
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if err := put(c, kv, k, next, s.cfg.MaxEntryBytes); err != nil {
		if errors.Is(err, errs.ErrResourceExhausted) || errors.Is(err, errs.ErrInvalidArgument) {
			s.logRefused(err)
			return err
		}
		s.cfg.Logger.Error("gcs: write-through failed", "bucket", kv.Bucket(), "key", k, "err", err)
		return errs.Unavailablef("gcs: store %s/%s: %v", kv.Bucket(), k, err)
	}
	apply(k, next)
	if event != "" {
		s.publish(event, next)
	}
	return nil
}

// refusalLogEvery spaces the warnings about refused entries: a client
// registering without end must not flood the head's log too.
const refusalLogEvery = 10 * time.Second

// logRefused logs an entry refused past a cap or a bucket's size: the
// first at once, then at most one line per refusalLogEvery with the count.
func (s *server) logRefused(err error) {
	s.refused++
	if now := s.cfg.now(); now.Sub(s.refusedLogged) >= refusalLogEvery {
		s.cfg.Logger.Warn("gcs: entries refused past the GCS's bounds", "refused", s.refused, "last", err)
		s.refused, s.refusedLogged = 0, now
	}
}

// publish announces a changed entry; a failure only loses the event.
func (s *server) publish(subject string, m proto.Message) {
	b, err := proto.Marshal(m)
	if err == nil {
		err = s.cfg.Conn.Publish(subject, b)
	}
	if err != nil {
		s.cfg.Logger.Warn("gcs: publish event", "subject", subject, "err", err)
	}
}

// pageBytes is the most bytes of entries one list reply holds: what
// NATS carries in a message, less room for the rest of the reply.
func (s *server) pageBytes() int {
	if s.cfg.pageBytes > 0 {
		return s.cfg.pageBytes
	}
	limit := int(s.cfg.Conn.MaxPayload())
	return max(limit/2, limit-replyHeadroom)
}

// replyHeadroom is what a list reply keeps of NATS's largest message for
// its envelope, the request's reply headers and an error.
const replyHeadroom = 64 << 10

// respond sends the reply, if the request asked for one.
func (s *server) respond(to string, reply *atollpb.GcsReply) {
	respond(s.cfg.Conn, s.cfg.Logger, "gcs", to, reply)
}

// respond sends reply to to, if the request asked for one (the GCS's and
// the placement server's replies). A reply larger than NATS carries is
// replaced by an error saying so, which the caller gets at once instead
// of waiting out its deadline.
func respond(conn *nats.Conn, log *slog.Logger, who, to string, reply *atollpb.GcsReply) {
	if to == "" {
		return
	}
	b, err := proto.Marshal(reply)
	if limit := conn.MaxPayload(); err == nil && int64(len(b)) > limit {
		log.Warn(who+": reply too large for NATS", "bytes", len(b), "max_payload", limit)
		b, err = proto.Marshal(errorReply(errs.Exhaustedf("%s: the reply of %d bytes exceeds the largest message NATS carries (%d bytes)", who, len(b), limit)))
	}
	if err == nil {
		err = conn.Publish(to, b)
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		log.Warn(who+": reply", "err", err)
	}
}

func errorReply(err error) *atollpb.GcsReply {
	return &atollpb.GcsReply{Error: errs.ToProto(err)}
}

// opName names the request's op as in gcs.proto (register_node, ...).
func opName(req *atollpb.GcsRequest) string {
	m := req.ProtoReflect()
	oneof := m.Descriptor().Oneofs().ByName("op")
	if f := m.WhichOneof(oneof); f != nil {
		return string(f.Name())
	}
	return "none"
}
