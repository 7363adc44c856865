package sim

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
)

// The fetcher (internal/cluster's fetch.go, on the calling thread): an
// object held on another node is pulled into this node's store, from the
// node of its primary copy or, if that node is gone or the pull fails,
// from the copies the owner's node knows of (its gateway's directory). A
// pulled copy is announced to the owner's node and recorded with its
// owner (freed with the owner's exit or its node's death).

// rpcTimeout bounds a request's wait for its answer (a locate, a pull
// that nothing answers).
const rpcTimeout = 2 * time.Second

// sealWait bounds a wait for another creation of the same object, cut in
// slices from otherCreationSlice to maxOtherCreationSlice where another
// client creates it (internal/cluster's fetch.go).
const (
	sealWait              = 2 * time.Minute
	otherCreationSlice    = 10 * time.Millisecond
	maxOtherCreationSlice = time.Second
)

// xfer is the store client id of the node's transfers.
func (n *node) xfer() ids.WorkerID {
	var id ids.WorkerID
	copy(id[:], n.id[:])
	id[15] ^= 0xff
	return id
}

// fetch makes every object of refs held on another node present here.
func (n *node) fetch(ctx context.Context, p *proc, refs []*atollpb.ObjectRef) error {
	var first error
	for _, r := range refs {
		node, err := ids.FromBytes(r.NodeId)
		if err != nil || node.IsZero() || node == n.id {
			continue
		}
		if err := n.fetchOne(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// present reports whether the store holds id sealed.
func (n *node) present(id ids.ObjectID) bool {
	res := n.store.store.Get([]ids.ObjectID{id}, n.xfer(), n.now())
	if len(res.Missing) > 0 {
		n.store.flush()
		return false
	}
	_ = n.store.store.Release([]ids.ObjectID{id}, n.xfer(), n.now())
	n.store.flush()
	return true
}

func (n *node) fetchOne(ctx context.Context, ref *atollpb.ObjectRef) error {
	id := ids.MustObjectID(ref.ObjectId)
	if err := ctx.Err(); err != nil {
		return err // its reader is gone: the object may be freed already
	}
	if n.present(id) {
		return nil
	}
	var owner ids.NodeID
	if b, err := hex.DecodeString(ref.OwnerAddress); err == nil {
		owner, _ = ids.FromBytes(b)
	}
	n.gw.NoteOwner(ref.OwnerId, ref.OwnerAddress)
	ownerWorker, _ := ids.FromBytes(ref.OwnerId)
	candidates := []ids.NodeID{ids.MustFromBytes(ref.NodeId)}
	tried := map[ids.NodeID]bool{}
	var lastErr error
	for round := 0; round < 2; round++ {
		for _, node := range candidates {
			if tried[node] || node == n.id {
				continue
			}
			tried[node] = true
			if err := ctx.Err(); err != nil {
				return err
			}
			if !n.peers[node] {
				lastErr = &errs.ObjectLostError{ObjectID: id.String(), Message: "held on node " + node.Short() + ", which is not (or no longer) in the cluster"}
				continue
			}
			err := n.pullFrom(ctx, node, id, ref.Codec, ownerWorker, ref.Size)
			if err == nil {
				n.announce(owner, id)
				return nil
			}
			if ctx.Err() != nil || errors.Is(err, errs.ErrObjectStoreFull) || !n.up {
				return err
			}
			lastErr = err
		}
		if owner.IsZero() {
			break
		}
		candidates = n.locate(owner, id)
	}
	return lastErr
}

// locate asks the owner's node which nodes hold copies of id.
func (n *node) locate(owner ids.NodeID, id ids.ObjectID) []ids.NodeID {
	to := n.w.byNode[owner]
	if to == nil {
		return nil
	}
	var out []ids.NodeID
	ok := n.w.rpc(n, to, pathNATS, n.name+".fetch", to.name+".gw", "LocateRequest", "gateway", id.Short(), func(reply func(any)) {
		reply(to.gw.Copies(id))
	}, func(v any) { out = v.([]ids.NodeID) })
	if !ok {
		return nil
	}
	return out
}

// announce tells the owner's node that this node holds a copy of id.
func (n *node) announce(owner ids.NodeID, id ids.ObjectID) {
	to := n.w.byNode[owner]
	if to == nil || !to.up {
		return
	}
	n.publish(to, "copy", id.Short(), &atollpb.ObjectCopies{ObjectId: id.Bytes(), NodeIds: [][]byte{n.id.Bytes()}})
}

// pullFrom pulls id from node into a new copy in this store.
func (n *node) pullFrom(ctx context.Context, node ids.NodeID, id ids.ObjectID, codec atollpb.Codec, owner ids.WorkerID, size uint64) error {
	w := n.w
	src := w.byNode[node]
	if src == nil {
		return &errs.ObjectLostError{ObjectID: id.String(), Message: "no node " + node.Short()}
	}
	s := n.store
	deadline := w.now.Add(sealWait)
	var buf []byte
	var err error
	for slice := otherCreationSlice; ; slice = min(2*slice, maxOtherCreationSlice) {
		buf, err = s.create(ctx, id, size, codec, owner, n.xfer(), true)
		if !errors.Is(err, objectstore.ErrObjectExists) {
			break
		}
		// Another creation of the object in this store. Another reader's
		// pull: wait until it is sealed, as the real fetcher's readers of
		// one object share its transfer and its error (a Get asked once
		// counts one read; its reader's context ends the wait). Another
		// client's (a worker writing it as its result): wait a slice at a
		// time and try again, taking the object over once that creation
		// is given up.
		creator, _ := s.store.CreatedBy(id)
		byPull := creator == n.xfer()
		end := deadline
		if !byPull && w.now.Add(slice).Before(end) {
			end = w.now.Add(slice)
		}
		w.after(end.Sub(w.now), func() {})
		w.park(func() bool {
			created, sealed := s.store.Holds(id)
			gone := byPull && !created // the real Get notices a seal only
			return !n.up || s != n.store || ctx.Err() != nil || gone || sealed || !w.now.Before(end)
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, sealed := s.store.Holds(id); n.up && s == n.store && sealed {
			// As the real fetcher's Get: a copy spilled meanwhile is
			// read back.
			if _, err := s.get(ctx, []ids.ObjectID{id}, n.xfer(), objectstore.PriorityGet); err != nil {
				return &errs.ObjectLostError{ObjectID: id.String(), Message: "a concurrent creation of the object could not be read: " + err.Error()}
			}
			_ = s.store.Release([]ids.ObjectID{id}, n.xfer(), n.now())
			s.flush()
			return nil
		}
		if byPull || !n.up || s != n.store || !w.now.Before(deadline) {
			return &errs.ObjectLostError{ObjectID: id.String(), Message: "a concurrent creation of the object did not complete"}
		}
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		// Its only reader left before it asked the source: the node's
		// transfer is cancelled and gives its copy back.
		_ = s.store.Abort(id, n.xfer(), n.now())
		s.flush()
		return ctx.Err()
	}
	// The transfer: the source pins the object while it serves it.
	var data []byte
	var pullErr error
	sent := w.now
	ok := w.rpc(n, src, pathDirect, n.name+".fetch", src.name+".xfer", "PullRequest", "objectstore", id.Short(), func(reply func(any)) {
		src.store.pull = pullAsk{id: id, sent: sent}
		objs, err := src.store.get(context.Background(), []ids.ObjectID{id}, src.xfer(), objectstore.PriorityGet)
		src.store.pull = pullAsk{}
		if err != nil {
			reply(err)
			return
		}
		b := append([]byte(nil), objs[0].Data...)
		_ = src.store.store.Release([]ids.ObjectID{id}, src.xfer(), src.now())
		src.store.flush()
		reply(b)
	}, func(v any) {
		switch x := v.(type) {
		case error:
			pullErr = x
		case []byte:
			data = x
		}
	})
	if !n.up || s != n.store {
		return errs.Unavailablef("object store stopped")
	}
	if !ok && pullErr == nil {
		pullErr = errs.Unavailablef("no answer from %s", src.name)
	}
	if pullErr == nil && uint64(len(data)) != size && size != 0 {
		pullErr = errs.Invalidf("the peer sent %d bytes, the object's ref says %d", len(data), size)
	}
	if pullErr != nil {
		_ = s.store.Abort(id, n.xfer(), n.now())
		s.flush()
		return &errs.ObjectLostError{ObjectID: id.String(), Message: "pull from node " + node.Short() + " failed: " + pullErr.Error()}
	}
	copy(buf, data)
	if err := s.store.Seal(id, n.xfer(), n.now()); err != nil {
		s.flush()
		return wireErr(err)
	}
	s.flush()
	w.log.add("%s.store sealed a copy of %s from %s", n.name, id.Short(), src.name)
	return nil
}

// rpc sends a request from a thread and parks it until the answer comes
// back or rpcTimeout passes; serve runs at the receiver (on the loop, or
// on a thread of its own if it must wait) and calls reply once. It
// reports whether an answer came.
func (w *World) rpc(from, to *node, p path, fromName, toName, kind, actor, desc string, serve func(reply func(any)), got func(any)) bool {
	answered, timedOut := false, false
	w.after(rpcTimeout, func() { timedOut = true })
	w.send(&msg{from: from, to: to, fromName: fromName, toName: toName, path: p, kind: kind, actor: actor, desc: desc, deliver: func() {
		if !to.up {
			return
		}
		w.spawn(nil, toName+" serves "+kind, func(context.Context) {
			serve(func(v any) {
				w.send(&msg{from: to, to: from, fromName: toName, toName: fromName, path: p, kind: strings.TrimSuffix(kind, "Request") + "Reply", actor: "owner", desc: desc,
					deliver: func() {
						if !answered && !timedOut && from.up {
							answered = true
							got(v)
						}
					}})
			})
		})
	}})
	w.park(func() bool { return answered || timedOut || !from.up })
	return answered
}
