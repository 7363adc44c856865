package cluster

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The node's side of the Active Memory Manager: it answers the head's
// inventory requests (atoll.node.<node>.objects) and drop requests
// (atoll.node.<node>.dropcopies) by asking its store. Both are served on
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
		defer func() { <-g.ammBusy }()
		reply, err := serve(m.Data)
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
		OwnerNodes: make([]string, len(list.Objects))}
	for i, h := range list.Objects {
		if w, err := ids.FromBytes(h.OwnerId); err == nil {
			if node, ok := g.owners.nodeOf(w); ok {
				out.OwnerNodes[i] = hex.EncodeToString(node.Bytes())
			}
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
