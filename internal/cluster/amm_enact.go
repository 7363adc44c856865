package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Enacting an AMM decision: replicas (and moves' replicas) pulled by
// their target nodes, then the drops sent to the stores, and the owners'
// directories of copies told.

// replicate asks the target node of each accepted replica to pull the
// object, at most replicasAtOnce at once and maxReplicasPerRound in all.
// The pull is the node's ordinary one: it makes a copy (not a primary),
// admitted by its store (a full store refuses it: no-fit), and tells the
// owner's node, whose copy directory then lists it.
//
// replicas may hold moves (amm.ActionMove): it returns, for each move
// whose replica was made, the drop of its source copy.
func (a *AMM) replicate(snap *amm.Snapshot, replicas []amm.Suggestion, owners map[amm.ObjectID]string, info map[amm.ObjectID]*atollpb.ObjectHolding) (*ammEnacted, []amm.Suggestion) {
	out := &ammEnacted{}
	var moved []amm.Suggestion
	if len(replicas) > maxReplicasPerRound {
		out.deferred = len(replicas) - maxReplicasPerRound
		replicas = replicas[:maxReplicasPerRound]
	}
	var mu sync.Mutex
	sem := make(chan struct{}, replicasAtOnce)
	var wg sync.WaitGroup
	for _, r := range replicas {
		req, target, err := a.replicateRequest(snap, r, owners, info)
		if err != nil {
			a.cfg.Logger.Debug("amm: replica not sent", "replica", r, "err", err)
			out.replFailed++
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			noFit, err := a.sendReplicate(target, req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				out.replicated++
				if r.Action == amm.ActionMove {
					moved = append(moved, amm.Suggestion{Action: amm.ActionDrop, Object: r.Object, Node: r.From})
				}
			case noFit:
				out.noFit++
			default:
				out.replFailed++
				a.cfg.Logger.Debug("amm: replication failed", "replica", r, "err", err)
			}
		}()
	}
	wg.Wait()
	if out.replicated > 0 {
		a.cfg.Logger.Debug("amm: replicated", "copies", out.replicated, "no-fit", out.noFit, "failed", out.replFailed)
	}
	return out, moved
}

// replicateRequest builds the request for one replica: the object's ref,
// pulling from a complete copy (the primary if it is listed).
func (a *AMM) replicateRequest(snap *amm.Snapshot, r amm.Suggestion, owners map[amm.ObjectID]string, info map[amm.ObjectID]*atollpb.ObjectHolding) (*atollpb.ReplicateRequest, ids.NodeID, error) {
	o, h := snap.Objects[r.Object], info[r.Object]
	if o == nil || h == nil {
		return nil, ids.NodeID{}, errors.New("object not in the snapshot")
	}
	var source amm.NodeID
	for _, c := range o.Copies {
		if c.Node != r.Node && !c.Pulling && (source == "" || c.Primary) {
			source = c.Node
		}
	}
	src, err := nodeIDFromHex(string(source))
	if err != nil {
		return nil, ids.NodeID{}, fmt.Errorf("no source: %w", err)
	}
	target, err := nodeIDFromHex(string(r.Node))
	if err != nil {
		return nil, ids.NodeID{}, err
	}
	ref := &atollpb.ObjectRef{ObjectId: h.ObjectId, OwnerId: h.OwnerId, OwnerAddress: owners[r.Object],
		Size: h.Size, NodeId: src.Bytes(), Codec: h.Codec}
	return &atollpb.ReplicateRequest{Ref: ref, TimeoutMs: a.cfg.ReplicateTimeout.Milliseconds()}, target, nil
}

// sendReplicate sends one replication request and waits for its answer.
func (a *AMM) sendReplicate(target ids.NodeID, req *atollpb.ReplicateRequest) (noFit bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ReplicateTimeout+a.cfg.RequestTimeout)
	defer cancel()
	b, _ := proto.Marshal(req)
	msg, err := a.cfg.Conn.RequestWithContext(ctx, nodeSubject(a.cfg.Prefix, target, "replicate"), b)
	if err != nil {
		return false, err
	}
	var reply atollpb.ReplicateReply
	if err := proto.Unmarshal(msg.Data, &reply); err != nil {
		return false, err
	}
	if reply.Error != "" {
		return reply.NoFit, errors.New(reply.Error)
	}
	return false, nil
}

func nodeIDFromHex(s string) (ids.NodeID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return ids.NodeID{}, err
	}
	return ids.FromBytes(b)
}

// enact sends the accepted drops to their nodes' stores, and tells each
// dropped copy's owner node to forget it.
func (a *AMM) enact(drops []amm.Suggestion, owners map[amm.ObjectID]string) *ammEnacted {
	byNode := map[amm.NodeID][][]byte{}
	for _, d := range drops {
		b, err := hex.DecodeString(string(d.Object))
		if err != nil {
			continue
		}
		byNode[d.Node] = append(byNode[d.Node], b)
	}
	out := &ammEnacted{}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.RequestTimeout)
	defer cancel()
	for node, list := range byNode {
		nb, err := hex.DecodeString(string(node))
		if err != nil {
			continue
		}
		nid, err := ids.FromBytes(nb)
		if err != nil {
			continue
		}
		for start := 0; start < len(list); start += maxDropsPerRequest {
			chunk := list[start:min(start+maxDropsPerRequest, len(list))]
			req, _ := proto.Marshal(&atollpb.DropCopiesRequest{ObjectIds: chunk, GraceMs: a.cfg.ReadGrace.Milliseconds()})
			msg, err := a.cfg.Conn.RequestWithContext(ctx, nodeSubject(a.cfg.Prefix, nid, "dropcopies"), req)
			var reply atollpb.DropCopiesReply
			if err != nil || proto.Unmarshal(msg.Data, &reply) != nil {
				out.failed++
				continue
			}
			out.stale += len(reply.Refused)
			for _, id := range reply.Dropped {
				if validObjectID(id) != nil {
					continue
				}
				out.dropped++
				a.forget(amm.ObjectID(hex.EncodeToString(id)), id, nid, owners)
			}
		}
	}
	if out.dropped > 0 {
		a.cfg.Logger.Debug("amm: dropped copies", "copies", out.dropped, "stale", out.stale)
	}
	return out
}

// forget tells the owner's node that node no longer holds a copy of id.
func (a *AMM) forget(oid amm.ObjectID, id []byte, node ids.NodeID, owners map[amm.ObjectID]string) {
	ob, err := hex.DecodeString(owners[oid])
	if err != nil {
		return
	}
	owner, err := ids.FromBytes(ob)
	if err != nil || owner.IsZero() {
		return
	}
	b, _ := proto.Marshal(&atollpb.ObjectCopies{ObjectId: id, NodeIds: [][]byte{node.Bytes()}, Dropped: true})
	_ = a.cfg.Conn.Publish(nodeSubject(a.cfg.Prefix, owner, "copy"), b)
}
