package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/remote"
)

// spreadPullMin is the size from which a fetch picks among every node
// holding the object instead of pulling from the primary's node first.
const spreadPullMin = 16 << 20

// sealWait bounds how long a reader waits for another creation of the
// same object in the local store to be sealed.
const sealWait = 2 * time.Minute

// otherCreationSlice and maxOtherCreationSlice bound the slices of that
// wait: after each, the pull is tried again, in case the other creation
// was given up (pullFrom).
const (
	otherCreationSlice    = 10 * time.Millisecond
	maxOtherCreationSlice = time.Second
)

// fetcher pulls objects held on other nodes into the local store. It is
// safe for concurrent use: callers are worker proxies and the driver's Get.
// The store is the copy-location directory of the node: an object already
// there (or being created there by another pull) is never pulled again.
type fetcher struct {
	self   ids.NodeID
	store  *objectstore.Client
	puller *remote.Puller
	nc     *nats.Conn
	prefix string
	owners *owners

	mu    sync.Mutex
	addrs map[ids.NodeID]string // transfer address per live node

	pulls       atomic.Uint64 // objects pulled into this store
	pulledBytes atomic.Uint64

	onPull func(TransferEvent) // nil: nobody listens

	// onOtherCreation, if set (tests), is called each time a pull found
	// another creation of its object unsealed after a slice of its wait.
	onOtherCreation func(ids.ObjectID)
}

// TransferEvent is one pull of an object from another node
// (Config.OnTransfer).
type TransferEvent struct {
	Object     ids.ObjectID
	From       ids.NodeID
	Bytes      uint64
	Start, End time.Time
	Err        error
}

func (f *fetcher) setAddr(node ids.NodeID, addr string) {
	f.mu.Lock()
	if addr == "" {
		delete(f.addrs, node)
	} else {
		f.addrs[node] = addr
	}
	f.mu.Unlock()
}

func (f *fetcher) addr(node ids.NodeID) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addrs[node]
}

// Fetch makes every object of refs held on another node present in the
// local store, pulling those that are not, concurrently.
func (f *fetcher) Fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	var remoteRefs []*atollpb.ObjectRef
	for _, r := range refs {
		if node, err := ids.FromBytes(r.NodeId); err == nil && !node.IsZero() && node != f.self {
			remoteRefs = append(remoteRefs, r)
		}
	}
	switch len(remoteRefs) {
	case 0:
		return nil
	case 1:
		return f.fetchOne(ctx, remoteRefs[0])
	}
	errc := make(chan error, len(remoteRefs))
	for _, r := range remoteRefs {
		go func() { errc <- f.fetchOne(ctx, r) }()
	}
	var first error
	for range remoteRefs {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// fetchOne pulls one object: from the node holding its primary copy, or,
// if that node is gone or the pull fails, from a copy another node pulled
// earlier (the owner's node keeps the directory of copies). A node that
// pulled a copy tells the owner's node.
func (f *fetcher) fetchOne(ctx context.Context, ref *atollpb.ObjectRef) error {
	id := ids.MustObjectID(ref.ObjectId)
	if err := ctx.Err(); err != nil {
		return err // its reader is gone: the object may be freed already
	}
	if f.present(ctx, id, 0) {
		return nil
	}
	var owner ids.NodeID
	if b, err := hex.DecodeString(ref.OwnerAddress); err == nil {
		owner, _ = ids.FromBytes(b)
	}
	// The copy belongs to the object's owner: freed with it, or when the
	// owner's node dies.
	ownerWorker, _ := ids.FromBytes(ref.OwnerId)
	f.owners.record(ref.OwnerId, ref.OwnerAddress)
	candidates := []ids.NodeID{ids.MustFromBytes(ref.NodeId)}
	if ref.Size >= spreadPullMin && !owner.IsZero() {
		// A large object others may have pulled already: pull from any
		// holder, so that a broadcast fans out from the copies rather than
		// all from the primary.
		candidates = append(candidates, f.locate(ctx, owner, id)...)
		rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	}
	tried := map[ids.NodeID]bool{}
	var lastErr error
	for round := 0; round < 2; round++ {
		for _, node := range candidates {
			if tried[node] || node == f.self {
				continue
			}
			tried[node] = true
			if err := ctx.Err(); err != nil {
				return err
			}
			addr := f.addr(node)
			if addr == "" {
				lastErr = &errs.ObjectLostError{ObjectID: id.String(), Message: "held on node " + node.Short() + ", which is not (or no longer) in the cluster"}
				continue
			}
			err := f.pullFrom(ctx, addr, node, id, ref.Codec, ownerWorker, ref.Size)
			if err == nil {
				f.announce(owner, id)
				return nil
			}
			if ctx.Err() != nil || errors.Is(err, errs.ErrObjectStoreFull) {
				return err
			}
			lastErr = err
		}
		if owner.IsZero() {
			break
		}
		candidates = f.locate(ctx, owner, id)
	}
	return lastErr
}

// locate asks the owner's node which nodes hold copies of id.
func (f *fetcher) locate(ctx context.Context, owner ids.NodeID, id ids.ObjectID) []ids.NodeID {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msg, err := f.nc.RequestWithContext(ctx, nodeSubject(f.prefix, owner, "locate"), id.Bytes())
	if err != nil {
		return nil
	}
	var c atollpb.ObjectCopies
	if proto.Unmarshal(msg.Data, &c) != nil {
		return nil
	}
	out := make([]ids.NodeID, 0, len(c.NodeIds))
	for _, n := range c.NodeIds {
		out = append(out, ids.MustFromBytes(n))
	}
	return out
}

// announce tells the owner's node that this node now holds a copy of id.
func (f *fetcher) announce(owner ids.NodeID, id ids.ObjectID) {
	if owner.IsZero() {
		return
	}
	b, _ := proto.Marshal(&atollpb.ObjectCopies{ObjectId: id.Bytes(), NodeIds: [][]byte{f.self.Bytes()}})
	_ = f.nc.Publish(nodeSubject(f.prefix, owner, "copy"), b)
}

// pullFrom pulls id from the node at addr into a new object of the local
// store and seals it. want is the object's size as its ref says (0:
// unknown): a peer declaring another size is refused before anything is
// allocated.
//
// The object may already be in the store, not sealed yet: another
// reader's transfer through this fetcher (which it joins, sharing its
// outcome) or a creation by another client of the store (a task's worker
// writing the object as its result again). It then waits, up to sealWait,
// for the object to be sealed; but a creation can also be given up (its
// worker dies, or it fails) and never sealed, so the wait is cut in
// slices, after each of which the pull is tried again: it takes the
// object over once the other creation is gone.
func (f *fetcher) pullFrom(ctx context.Context, addr string, node ids.NodeID, id ids.ObjectID, codec atollpb.Codec, owner ids.WorkerID, want uint64) error {
	deadline := time.Now().Add(sealWait)
	for slice := otherCreationSlice; ; slice = min(2*slice, maxOtherCreationSlice) {
		shared, err := f.pullOnce(ctx, addr, node, id, codec, owner, want)
		switch {
		case err == nil && !shared:
			return nil
		case err == nil || errors.Is(err, objectstore.ErrObjectExists):
			// Another reader's transfer (sealed already) or another
			// client's creation: wait until it is sealed.
			if f.present(ctx, id, max(0, min(slice, time.Until(deadline)))) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if f.onOtherCreation != nil {
				f.onOtherCreation(id)
			}
			if time.Now().Before(deadline) {
				continue
			}
			return &errs.ObjectLostError{ObjectID: id.String(), Message: "another creation of the object in this node's store was not sealed within " + sealWait.String()}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errs.ErrObjectStoreFull):
			return err
		}
		return &errs.ObjectLostError{ObjectID: id.String(), Message: "pull from node " + node.Short() + " failed: " + err.Error()}
	}
}

// pullOnce is one try of pullFrom: shared reports that the bytes came
// from another reader's transfer; an error matching ErrObjectExists, that
// another client of the store is creating the object.
func (f *fetcher) pullOnce(ctx context.Context, addr string, node ids.NodeID, id ids.ObjectID, codec atollpb.Codec, owner ids.WorkerID, want uint64) (shared bool, err error) {
	start := time.Now()
	var n uint64
	if f.onPull != nil {
		defer func() {
			if (!shared && n > 0) || (err != nil && !errors.Is(err, objectstore.ErrObjectExists)) { // not another reader's pull
				f.onPull(TransferEvent{Object: id, From: node, Bytes: n, Start: start, End: time.Now(), Err: err})
			}
		}()
	}
	n, shared, err = f.puller.Pull(ctx, addr, id, func(size uint64) ([]byte, error) {
		if err := checkPullSize(size, want); err != nil {
			return nil, err
		}
		buf, err := f.store.CreateCopy(ctx, id, size, codec, owner)
		if err == nil && len(buf) >= 1<<20 {
			f.store.PrefaultView(buf)
		}
		return buf, err
	}, func(n uint64, err error) error {
		// The transfer ended and writes no more into the copy (whoever
		// waits on it, this reader or no longer): seal it, or give it
		// back. The store's calls outlive the reader's context.
		bg := context.WithoutCancel(ctx)
		if err != nil {
			if !errors.Is(err, objectstore.ErrObjectExists) {
				_ = f.store.Abort(bg, id) // a no-op unless this pull created it
			}
			return err
		}
		if err := f.store.Seal(bg, id); err != nil {
			return err
		}
		f.pulls.Add(1)
		f.pulledBytes.Add(n)
		return nil
	})
	return shared, err
}

// checkPullSize refuses a pull whose peer declares a size other than the
// one the object's ref records (want; 0 when the ref has none).
func checkPullSize(declared, want uint64) error {
	if want != 0 && declared != want {
		return fmt.Errorf("the peer declares %d bytes, the object's ref %d", declared, want)
	}
	return nil
}

// present reports whether the store holds id sealed, waiting up to wait.
func (f *fetcher) present(ctx context.Context, id ids.ObjectID, wait time.Duration) bool {
	if _, err := f.store.Get(ctx, []ids.ObjectID{id}, wait); err != nil {
		return false
	}
	f.store.Release(id)
	return true
}

// serve is the node's remote.ObjectSource: a pinned view of a local object.
func serve(store *objectstore.Client) remote.ObjectSource {
	return remote.ObjectSourceFunc(func(ctx context.Context, id ids.ObjectID) ([]byte, func(), error) {
		objs, err := store.Get(ctx, []ids.ObjectID{id}, 0)
		if err != nil {
			if errors.Is(err, errs.ErrGetTimeout) {
				return nil, nil, errs.NotFoundf("object %s is not in this node's store", id.Short())
			}
			return nil, nil, err
		}
		return objs[0].Data, func() { store.Release(id) }, nil
	})
}
