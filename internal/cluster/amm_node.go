package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The node's side of the Active Memory Manager: it answers the head's
// inventory requests (atoll.node.<node>.objects) and drop requests
// (atoll.node.<node>.dropcopies) by asking its store, and replication
// requests (atoll.node.<node>.replicate) by pulling the object as for a
// task's argument (serveReplicate, below). Both are served on
// a goroutine each, at most ammConcurrency at once; a request arriving
// when that many are being served is dropped (the AMM's request times
// out and its next round asks again).

// ammConcurrency bounds the AMM requests a node serves at once.
const ammConcurrency = 2

// maxDropsPerRequest bounds the ids of one drop request.
const maxDropsPerRequest = 4096

// storeAsk bounds the wait for the store's answer.
const storeAsk = 5 * time.Second

func (g *Gateway) serveAMM(m *nats.Msg, serve func([]byte) (proto.Message, error)) {
	select {
	case g.ammBusy <- struct{}{}:
	default:
		g.cfg.Logger.Debug("cluster: AMM request dropped: busy", "subject", m.Subject)
		return
	}
	go func() {
		reply, err := serve(m.Data)
		<-g.ammBusy // freed before answering: the caller's next request may follow at once
		if err != nil {
			g.cfg.Logger.Warn("cluster: AMM request refused", "subject", m.Subject, "err", err)
			return
		}
		b, _ := proto.Marshal(reply)
		_ = m.Respond(b)
	}()
}

// listObjects answers an inventory request with the store's objects and
// the owner node of each, where known.
func (g *Gateway) listObjects(data []byte) (proto.Message, error) {
	var req atollpb.ListObjectsRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("undecodable inventory request: %w", err)
	}
	if req.GraceMs < 0 {
		return nil, errors.New("negative grace_ms")
	}
	res, err := g.cfg.System.Root.RequestFuture(g.cfg.Store, &req, storeAsk).Result()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	list, ok := res.(*atollpb.ObjectList)
	if !ok {
		return nil, fmt.Errorf("store answered %T", res)
	}
	out := &atollpb.NodeObjects{NodeId: g.cfg.NodeID.Bytes(), IsDriver: g.cfg.Node.GetIsDriver(), List: list,
		OwnerNodes: make([]string, len(list.Objects)), Draining: g.drain.draining.Load(),
		Queued: g.drain.queued.Load(), Running: g.drain.running.Load()}
	self := hex.EncodeToString(g.cfg.NodeID.Bytes())
	for i, h := range list.Objects {
		w, err := ids.FromBytes(h.OwnerId)
		if err != nil || w.IsZero() {
			continue
		}
		if node, ok := g.owners.nodeOf(w); ok {
			out.OwnerNodes[i] = hex.EncodeToString(node.Bytes())
		} else if !h.Copy {
			// A primary whose owner this node never heard of: a local
			// process put it or submitted its task (remote owners are
			// recorded when their tasks or pulls arrive).
			out.OwnerNodes[i] = self
		}
	}
	return out, nil
}

// dropCopies asks the store to drop copies; the store refuses those that
// became primaries, pinned, read or busy since the AMM's snapshot.
func (g *Gateway) dropCopies(data []byte) (proto.Message, error) {
	var req atollpb.DropCopiesRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("undecodable drop request: %w", err)
	}
	if len(req.ObjectIds) > maxDropsPerRequest || req.GraceMs < 0 {
		return nil, fmt.Errorf("drop request of %d ids (at most %d), grace %d ms", len(req.ObjectIds), maxDropsPerRequest, req.GraceMs)
	}
	for _, id := range req.ObjectIds {
		if err := validObjectID(id); err != nil {
			return nil, err
		}
	}
	res, err := g.cfg.System.Root.RequestFuture(g.cfg.Store, &req, storeAsk).Result()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	reply, ok := res.(*atollpb.DropCopiesReply)
	if !ok {
		return nil, fmt.Errorf("store answered %T", res)
	}
	return reply, nil
}

// replicateConcurrency bounds the AMM's replications a node runs at once;
// a request beyond it is refused as busy (the AMM's next round asks
// again).
const replicateConcurrency = 4

// maxReplicateTimeout bounds one replication's pull.
const maxReplicateTimeout = 2 * time.Minute

// serveReplicate runs a replication request on its own goroutine (a pull
// takes as long as the bytes do) and answers with a ReplicateReply.
func (g *Gateway) serveReplicate(m *nats.Msg) {
	respond := func(r *atollpb.ReplicateReply) {
		b, _ := proto.Marshal(r)
		_ = m.Respond(b)
	}
	var req atollpb.ReplicateRequest
	if err := proto.Unmarshal(m.Data, &req); err != nil {
		respond(&atollpb.ReplicateReply{Error: "undecodable replicate request"})
		return
	}
	if err := validReplicate(&req); err != nil {
		respond(&atollpb.ReplicateReply{Error: err.Error()})
		return
	}
	if ids.MustFromBytes(req.Ref.NodeId) == g.cfg.NodeID {
		respond(&atollpb.ReplicateReply{Error: "replicate from this node to itself"})
		return
	}
	select {
	case g.replBusy <- struct{}{}:
	default:
		respond(&atollpb.ReplicateReply{Error: "busy: too many replications under way"})
		return
	}
	go func() {
		timeout := maxReplicateTimeout
		if req.TimeoutMs > 0 {
			timeout = min(timeout, time.Duration(req.TimeoutMs)*time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := g.fetch.fetchOne(ctx, req.Ref)
		cancel()
		<-g.replBusy // freed before answering: the caller's next request may follow at once
		switch {
		case err == nil:
			respond(&atollpb.ReplicateReply{})
		case errors.Is(err, errs.ErrObjectStoreFull):
			respond(&atollpb.ReplicateReply{Error: err.Error(), NoFit: true})
		default:
			respond(&atollpb.ReplicateReply{Error: err.Error()})
		}
	}()
}

// validReplicate checks a replication request before the fetcher trusts
// it (its Must* conversions panic on malformed ids).
func validReplicate(r *atollpb.ReplicateRequest) error {
	ref := r.Ref
	switch {
	case ref == nil:
		return errors.New("replicate request without a ref")
	case r.TimeoutMs < 0:
		return errors.New("negative timeout_ms")
	case len(ref.OwnerAddress) > 2*ids.Len16:
		return errors.New("owner_address too long")
	}
	if _, ok := atollpb.Codec_name[int32(ref.Codec)]; !ok {
		return fmt.Errorf("unknown codec %d", ref.Codec)
	}
	if err := validObjectID(ref.ObjectId); err != nil {
		return err
	}
	if err := validID("node_id", ref.NodeId); err != nil {
		return err
	}
	if len(ref.OwnerId) > 0 {
		if err := validID("owner_id", ref.OwnerId); err != nil {
			return err
		}
	}
	return nil
}

// SetReplicas asks the head's Active Memory Manager to keep n copies of
// object (amm.AllNodes: one on every node; 0: stop tracking).
func (g *Gateway) SetReplicas(ctx context.Context, object ids.ObjectID, n int) error {
	return (&AMMClient{Conn: g.cfg.Conn, Prefix: g.cfg.Prefix}).SetReplicas(ctx, object, n)
}
