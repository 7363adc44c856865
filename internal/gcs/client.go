package gcs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// ClientOptions configures a Client. The zero value is valid.
type ClientOptions struct {
	// Prefix must match the server's Config.Prefix. Default DefaultPrefix.
	Prefix string
	// Timeout bounds a request whose context has no deadline. Default
	// DefaultRequestTimeout.
	Timeout time.Duration
	// WaitForServer retries a request that finds no GCS listening (for
	// instance while a restarted GCS reloads its tables) until the
	// context or Timeout expires. Default false: fail at once.
	WaitForServer bool
	// Propagator injects the caller's trace context into request headers.
	// Default: otel.GetTextMapPropagator(), or W3C TraceContext when no
	// global propagator is set.
	Propagator propagation.TextMapPropagator
}

// Client sends typed requests to the GCS over NATS. It is safe for
// concurrent use and holds no state besides its options.
type Client struct {
	nc      *nats.Conn
	opts    ClientOptions
	subject string
}

// NewClient returns a client of the GCS reachable over nc. An invalid
// Prefix is not detected here; requests then find no GCS.
func NewClient(nc *nats.Conn, opts ClientOptions) *Client {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRequestTimeout
	}
	return &Client{nc: nc, opts: opts, subject: RequestSubject(opts.Prefix)}
}

// RegisterNode registers a node as alive, or re-registers it. It goes to
// the node's own subject (NodeRequestSubject): on a head's NATS only the
// node's own connection (or the head's) may register it.
//
// A registration is idempotent, so one the GCS could not take
// (UNAVAILABLE: no GCS serving yet, or its store's write timed out under
// load) is sent again, backing off from 50 ms to 1 s, until it succeeds,
// fails otherwise, or ctx ends (RegisterRetryFor when ctx has no
// deadline); the last attempt's error is returned then.
func (c *Client) RegisterNode(ctx context.Context, n *atollpb.NodeInfo) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, RegisterRetryFor)
		defer cancel()
	}
	req := &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterNode{RegisterNode: n}}
	var last error
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := c.register(ctx, n.GetNodeId(), req)
		if err != nil && !errors.Is(err, errs.ErrUnavailable) {
			return struct{}{}, backoff.Permanent(err)
		}
		if err != nil {
			last = err
		}
		return struct{}{}, err
	}, backoff.WithBackOff(&backoff.ExponentialBackOff{
		InitialInterval: 50 * time.Millisecond, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: time.Second,
	}), backoff.WithMaxElapsedTime(0))
	if err != nil && last != nil && ctx.Err() != nil {
		return last
	}
	return err
}

// RegisterRetryFor bounds RegisterNode's retries when its context has no
// deadline.
const RegisterRetryFor = 30 * time.Second

// register sends a registration of node id on its NodeRequestSubject.
func (c *Client) register(ctx context.Context, id []byte, req *atollpb.GcsRequest) error {
	v, err := ids.FromBytes(id)
	if err != nil {
		return errs.Invalidf("gcs %s: node id: %v", opName(req), err)
	}
	_, err = c.doOn(ctx, NodeRequestSubject(c.opts.Prefix, v), req)
	return err
}

// ReregisterNode registers a node again after its connection to the
// control plane came back (the head, and its GCS, may have restarted): as
// RegisterNode, but a node the GCS lists dead stays dead, and the call
// fails with NODE_DIED (errs.NodeDiedError).
func (c *Client) ReregisterNode(ctx context.Context, n *atollpb.NodeInfo) error {
	return c.register(ctx, n.GetNodeId(), &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ReregisterNode{ReregisterNode: n}})
}

// MarkNodeDead marks a known node dead and records its end time and why
// (left: it left on purpose; reason: a few words, at most
// MaxEndReasonBytes); the entry stays in the table. Marking a dead node
// again is a no-op: the first end and its reason stand.
func (c *Client) MarkNodeDead(ctx context.Context, nodeID []byte, left bool, reason string) error {
	_, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_MarkNodeDead{MarkNodeDead: &atollpb.MarkNodeDead{NodeId: nodeID, Left: left, Reason: reason}}})
	return err
}

// ListNodes returns every node, dead ones included, ordered by id (in
// as many requests as replies NATS can carry take).
func (c *Client) ListNodes(ctx context.Context) ([]*atollpb.NodeInfo, error) {
	return listAll(ctx, c, "list_nodes", func(p *atollpb.ListPage) *atollpb.GcsRequest {
		return &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListNodes{ListNodes: &atollpb.ListNodes{Page: p}}}
	}, (*atollpb.GcsReply).GetNodes, (*atollpb.NodeInfo).GetNodeId)
}

// listAll gathers a paged list (atollpb.ListPage): each request asks for
// the entries after the last one the previous reply held, until a reply
// says there are no more. A reply that says more but holds nothing (only
// a broken server sends one) is an error rather than a loop.
func listAll[V any](ctx context.Context, c *Client, op string, req func(*atollpb.ListPage) *atollpb.GcsRequest,
	entries func(*atollpb.GcsReply) []V, id func(V) []byte) ([]V, error) {
	var out []V
	p := &atollpb.ListPage{}
	for {
		r, err := c.do(ctx, req(p))
		if err != nil {
			return nil, err
		}
		page := entries(r)
		out = append(out, page...)
		if !r.GetMore() {
			return out, nil
		}
		if len(page) == 0 {
			return nil, errs.Unavailablef("gcs %s: a reply says more entries follow and holds none", op)
		}
		p = &atollpb.ListPage{AfterId: id(page[len(page)-1])}
	}
}

// RegisterActor registers an actor (state PENDING_CREATION unless given).
// It fails with an INVALID_ARGUMENT error if another live actor holds the
// same name in the same namespace.
func (c *Client) RegisterActor(ctx context.Context, a *atollpb.ActorInfo) error {
	_, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterActor{RegisterActor: a}})
	return err
}

// UpdateActor replaces the entry of a registered actor (state, restarts,
// address, death cause). An actor that becomes DEAD frees its name.
func (c *Client) UpdateActor(ctx context.Context, a *atollpb.ActorInfo) error {
	_, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_UpdateActor{UpdateActor: a}})
	return err
}

// GetActor returns an actor by id, or a NOT_FOUND error.
func (c *Client) GetActor(ctx context.Context, actorID []byte) (*atollpb.ActorInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetActor{GetActor: actorID}})
	return first(r.GetActors(), err)
}

// GetNamedActor returns the live actor holding name in namespace, or a
// NOT_FOUND error.
func (c *Client) GetNamedActor(ctx context.Context, namespace, name string) (*atollpb.ActorInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetNamedActor{
		GetNamedActor: &atollpb.GetNamedActor{Namespace: namespace, Name: name},
	}})
	return first(r.GetActors(), err)
}

// ListActors returns every actor, dead ones included, ordered by id (in
// as many requests as replies NATS can carry take).
func (c *Client) ListActors(ctx context.Context) ([]*atollpb.ActorInfo, error) {
	return c.listActors(ctx, false)
}

// ListActorsLeftOnDeadNodes returns the actors not DEAD whose node the
// GCS lists dead (what a node's death left when their writes failed),
// ordered by id: replies as small as what it finds.
func (c *Client) ListActorsLeftOnDeadNodes(ctx context.Context) ([]*atollpb.ActorInfo, error) {
	return c.listActors(ctx, true)
}

func (c *Client) listActors(ctx context.Context, leftOnDeadNodes bool) ([]*atollpb.ActorInfo, error) {
	return listAll(ctx, c, "list_actors", func(p *atollpb.ListPage) *atollpb.GcsRequest {
		return &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListActors{ListActors: &atollpb.ListActors{LeftOnDeadNodes: leftOnDeadNodes, Page: p}}}
	}, (*atollpb.GcsReply).GetActors, (*atollpb.ActorInfo).GetActorId)
}

// AddJob records a job (start time defaults to now), replacing any entry
// with the same id.
func (c *Client) AddJob(ctx context.Context, j *atollpb.JobInfo) error {
	_, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_AddJob{AddJob: j}})
	return err
}

// FinishJob marks a known job finished and records its end time.
func (c *Client) FinishJob(ctx context.Context, jobID []byte) error {
	_, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_FinishJob{FinishJob: jobID}})
	return err
}

// ListJobs returns every job, ordered by id (in as many requests as
// replies NATS can carry take).
func (c *Client) ListJobs(ctx context.Context) ([]*atollpb.JobInfo, error) {
	return listAll(ctx, c, "list_jobs", func(p *atollpb.ListPage) *atollpb.GcsRequest {
		return &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListJobs{ListJobs: &atollpb.ListJobs{Page: p}}}
	}, (*atollpb.GcsReply).GetJobs, (*atollpb.JobInfo).GetJobId)
}

// CreatePlacementGroup creates a placement group (info's id chosen by the
// caller; a repeated request with the same id changes nothing) and
// returns its entry, PENDING until its bundles are reserved.
func (c *Client) CreatePlacementGroup(ctx context.Context, info *atollpb.PlacementGroupInfo) (*atollpb.PlacementGroupInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_CreatePlacementGroup{CreatePlacementGroup: info}})
	return firstGroup(r.GetPlacementGroups(), err)
}

// RemovePlacementGroup removes a placement group (again: no-op): its
// bundles are released and what runs in them killed.
func (c *Client) RemovePlacementGroup(ctx context.Context, id []byte) (*atollpb.PlacementGroupInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RemovePlacementGroup{RemovePlacementGroup: id}})
	return firstGroup(r.GetPlacementGroups(), err)
}

// GetPlacementGroup returns a group by id, or a NOT_FOUND error.
func (c *Client) GetPlacementGroup(ctx context.Context, id []byte) (*atollpb.PlacementGroupInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetPlacementGroup{GetPlacementGroup: &atollpb.GetPlacementGroup{PlacementGroupId: id}}})
	return firstGroup(r.GetPlacementGroups(), err)
}

// GetNamedPlacementGroup returns the live group named name in namespace,
// or a NOT_FOUND error.
func (c *Client) GetNamedPlacementGroup(ctx context.Context, namespace, name string) (*atollpb.PlacementGroupInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetPlacementGroup{GetPlacementGroup: &atollpb.GetPlacementGroup{Namespace: namespace, Name: name}}})
	return firstGroup(r.GetPlacementGroups(), err)
}

// ListPlacementGroups returns every group the head knows (the removed
// ones it remembers included), oldest first.
func (c *Client) ListPlacementGroups(ctx context.Context) ([]*atollpb.PlacementGroupInfo, error) {
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListPlacementGroups{ListPlacementGroups: &atollpb.ListPlacementGroups{}}})
	return r.GetPlacementGroups(), err
}

// WaitPlacementGroup returns the group once it is created or removed, or
// as it is after timeout (at most 30 s a request: ask again).
func (c *Client) WaitPlacementGroup(ctx context.Context, id []byte, timeout time.Duration) (*atollpb.PlacementGroupInfo, error) {
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout+c.opts.Timeout)
	defer cancel()
	r, err := c.do(rctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_WaitPlacementGroup{WaitPlacementGroup: &atollpb.WaitPlacementGroup{
		PlacementGroupId: id, TimeoutMs: max(timeout.Milliseconds(), 1)}}})
	return firstGroup(r.GetPlacementGroups(), err)
}

// RequestResources asks the cluster's autoscaler to hold room for
// bundles at once, for requester (an empty list withdraws its request):
// Ray's request_resources. Without an autoscaler it is UNAVAILABLE.
func (c *Client) RequestResources(ctx context.Context, requester []byte, bundles []*atollpb.Bundle) error {
	_, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RequestResources{RequestResources: &atollpb.RequestResources{Requester: requester, Bundles: bundles}}})
	return err
}

func firstGroup(gs []*atollpb.PlacementGroupInfo, err error) (*atollpb.PlacementGroupInfo, error) {
	if err != nil {
		return nil, err
	}
	if len(gs) != 1 {
		return nil, errs.Unavailablef("gcs: reply holds %d placement groups, want 1", len(gs))
	}
	return gs[0], nil
}

func first(actors []*atollpb.ActorInfo, err error) (*atollpb.ActorInfo, error) {
	if err != nil {
		return nil, err
	}
	if len(actors) != 1 {
		return nil, errs.Unavailablef("gcs: reply holds %d actors, want 1", len(actors))
	}
	return actors[0], nil
}

// do sends req with the caller's trace context and decodes the reply. A
// typed error in the reply is returned as such (errs.FromProto); transport
// failures are UNAVAILABLE errors that also match the context's error.
func (c *Client) do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	return c.doOn(ctx, "", req)
}

// doOn is do on subject; "" picks RequestSubject, or ReadSubject for a
// read.
func (c *Client) doOn(ctx context.Context, subject string, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	op := opName(req)
	data, err := proto.Marshal(req)
	if err != nil {
		return nil, errs.Invalidf("gcs %s: encode request: %v", op, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	switch pg, read := placementOp(req); {
	case subject != "":
	case pg && read:
		subject = PlacementReadSubject(c.opts.Prefix)
	case pg:
		subject = PlacementSubject(c.opts.Prefix)
	case isRequestResources(req):
		subject = AutoscalerSubject(c.opts.Prefix)
	case readOnly(req):
		subject = ReadSubject(c.opts.Prefix)
	default:
		subject = c.subject
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	propagatorOrDefault(c.opts.Propagator).Inject(ctx, natsHeaderCarrier(msg.Header))

	resp, err := c.request(ctx, msg)
	if err != nil {
		return nil, c.transportError(ctx, op, msg, err)
	}
	reply := &atollpb.GcsReply{}
	if err := proto.Unmarshal(resp.Data, reply); err != nil {
		return nil, errs.Unavailablef("gcs %s: undecodable reply: %v", op, err)
	}
	if reply.Error != nil {
		return nil, errs.FromProto(reply.Error)
	}
	return reply, nil
}

// request sends msg, retrying while nobody listens if WaitForServer is set
// (backing off from 10 ms to 500 ms). When ctx ends first it returns the
// last attempt's error, which says nobody was listening.
func (c *Client) request(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	if !c.opts.WaitForServer {
		return c.nc.RequestMsgWithContext(ctx, msg)
	}
	var last error
	resp, err := backoff.Retry(ctx, func() (*nats.Msg, error) {
		resp, err := c.nc.RequestMsgWithContext(ctx, msg)
		if err != nil && !errors.Is(err, nats.ErrNoResponders) {
			return nil, backoff.Permanent(err)
		}
		last = err
		return resp, err
	}, backoff.WithBackOff(&backoff.ExponentialBackOff{
		InitialInterval: 10 * time.Millisecond, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: 500 * time.Millisecond,
	}), backoff.WithMaxElapsedTime(0))
	if err != nil && last != nil && ctx.Err() != nil {
		return nil, last
	}
	return resp, err
}

func (c *Client) transportError(ctx context.Context, op string, msg *nats.Msg, err error) error {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return errs.Unavailablef("gcs %s: no GCS is serving %s", op, msg.Subject)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", errs.Unavailablef("gcs %s: no reply", op), ctx.Err())
	case errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%w: %w", errs.Unavailablef("gcs %s: no reply", op), context.DeadlineExceeded)
	}
	return errs.Unavailablef("gcs %s: %v", op, err)
}

// Do sends a raw request; the reply's error, if any, comes back as a typed
// error. Raylets use it to serve GCS requests of their worker processes.
func (c *Client) Do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	return c.do(ctx, req)
}
