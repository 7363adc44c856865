package sim

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// The store's shell: a node's objectstore.Store (the same spilling core
// as a real node's) with the bytes of its objects, its waiting creations
// and Gets, and its spill I/O on the node's simulated disk. It answers
// the store clients of the node's processes synchronously, as far as the
// Store decides at once; a creation that waits for space and a Get that
// waits for restores park the calling thread. It models what
// internal/objectstore's actor does for the calls a runtime makes (Gets
// without a timeout: only restores are waited for).

// CreateTimeout is how long a creation waits for space (the store's
// default).
const CreateTimeout = objectstore.DefaultCreateTimeout

type storeParty struct {
	n     *node
	store *objectstore.Store
	// data are the bytes of the objects in memory, and which object each
	// block holds.
	data     map[ids.ObjectID][]byte
	byOffset map[uint64]ids.ObjectID
	// token numbers creations and Gets that wait.
	token   uint64
	creates map[uint64]*createWait
	gets    map[uint64]*getWait
	// failCreates fails the next creations (a store-full fault).
	failCreates int
	wakeGen     uint64
	wakeAt      time.Time
	// rafSeen is the store's reads-after-free count the checks saw.
	rafSeen uint64
	// pull, while the store serves a pull, is the object and when
	// (simulated time) the puller sent it.
	pull   pullAsk
	spills map[uint64]bool
}

// pullAsk is a pull a store serves: a read of id asked at sent.
type pullAsk struct {
	id   ids.ObjectID
	sent time.Time
}

type createWait struct {
	done bool
	loc  objectstore.Location
	err  error
}

type getWait struct {
	client  ids.WorkerID
	want    []ids.ObjectID
	locs    []objectstore.Location
	missing map[ids.ObjectID]int
	err     error
	done    bool
}

func newStoreParty(n *node) *storeParty {
	s := &storeParty{n: n, data: map[ids.ObjectID][]byte{}, byOffset: map[uint64]ids.ObjectID{}, creates: map[uint64]*createWait{},
		gets: map[uint64]*getWait{}, spills: map[uint64]bool{}}
	s.store = objectstore.NewSpillingStore(n.w.cfg.StoreBytes, objectstore.SpillPolicy{})
	s.store.SetDiskSpace(n.disk.free(), n.disk.capacity, n.now())
	s.flush()
	return s
}

// crash loses everything the store held; its disk's files go with the
// process (spill files have no name).
func (s *storeParty) crash() {
	for _, c := range s.creates {
		c.done, c.err = true, errs.Unavailablef("object store stopped")
	}
	for _, g := range s.gets {
		g.done, g.err = true, errs.Unavailablef("object store stopped")
	}
	s.n.disk.clear()
}

// flush carries out the Store's effects and re-arms its deadline.
func (s *storeParty) flush() {
	n := s.n
	for n.up {
		eff := s.store.TakeEffects()
		if len(eff.Completions)+len(eff.Freed)+len(eff.Spills)+len(eff.Restores)+len(eff.Restored)+len(eff.RemoveFiles)+len(eff.Punches) == 0 {
			break
		}
		for _, r := range eff.Freed {
			if id, ok := s.byOffset[r.Offset]; ok {
				delete(s.byOffset, r.Offset)
				delete(s.data, id)
			}
		}
		for _, c := range eff.Completions {
			cw := s.creates[c.Token]
			delete(s.creates, c.Token)
			switch {
			case cw == nil:
				if c.Err == nil {
					_ = s.store.Abort(c.ID, c.Client, n.now())
				}
			case c.Err != nil:
				cw.done, cw.err = true, c.Err
			default:
				cw.done, cw.loc = true, c.Location
				s.place(c.Location)
			}
		}
		for _, b := range eff.Spills {
			s.spill(b)
		}
		for _, r := range eff.Restores {
			s.restore(r)
		}
		for _, out := range eff.Restored {
			s.restored(out)
		}
		for _, f := range eff.RemoveFiles {
			n.disk.remove(f)
		}
		for _, ext := range eff.Punches {
			n.disk.punch(ext)
		}
	}
	s.rearm()
	n.w.check.readsAfterFree(s)
}

// place makes the bytes of a granted block.
func (s *storeParty) place(loc objectstore.Location) {
	s.data[loc.ID] = make([]byte, loc.Length)
	s.byOffset[loc.Offset] = loc.ID
}

// rearm schedules the Store's next deadline (creations and restores
// waiting for space fail at theirs).
func (s *storeParty) rearm() {
	n := s.n
	next, ok := s.store.NextDeadline()
	if !ok {
		return
	}
	at := n.toGlobal(next)
	if !s.wakeAt.IsZero() && !at.Before(s.wakeAt) && s.wakeAt.After(n.w.now) {
		return
	}
	s.wakeGen++
	gen := s.wakeGen
	s.wakeAt = at
	n.w.at(at, func() {
		if gen != s.wakeGen || !n.up {
			return
		}
		s.wakeAt = time.Time{}
		s.store.ExpirePending(n.now())
		s.flush()
	})
}

// spill writes a batch to the disk, after the disk's latency.
func (s *storeParty) spill(b objectstore.SpillBatch) {
	n := s.n
	objs := make([][]byte, len(b.Objects))
	var size uint64
	for i, loc := range b.Objects {
		objs[i] = s.data[loc.ID]
		size += loc.Length
	}
	s.spills[b.ID] = true
	n.disk.write(n, size, func(err error) (spill.Written, error) {
		if err != nil {
			return spill.Written{}, err
		}
		return n.disk.writeFile(b, objs), nil
	}, func(wr spill.Written, err error) {
		if !n.up {
			return
		}
		delete(s.spills, b.ID)
		n.w.log.add("%s.store spill batch %d: %d objects, %v", n.name, b.ID, len(b.Objects), errText(err))
		if e := s.store.SpillDone(b.ID, wr, err, n.now()); e != nil && err == nil {
			n.disk.remove(wr.File)
		}
		s.store.SetDiskSpace(n.disk.free(), n.disk.capacity, n.now())
		s.flush()
	})
}

// restore reads an object back from the disk into its new block.
func (s *storeParty) restore(r objectstore.RestoreStart) {
	n := s.n
	loc, ext := r.Location, r.Extent
	n.disk.read(n, loc.Length, func(err error) {
		if !n.up {
			return
		}
		if err == nil {
			var data []byte
			data, err = n.disk.readExtent(ext)
			if err == nil {
				s.data[loc.ID] = append([]byte(nil), data...)
				s.byOffset[loc.Offset] = loc.ID
			}
		}
		n.w.log.add("%s.store restore %s: %v", n.name, loc.ID.Short(), errText(err))
		_ = s.store.RestoreDone(r.Ticket, err, n.now())
		s.flush()
	})
}

// restored answers the Gets a restore was for.
func (s *storeParty) restored(out objectstore.RestoreOutcome) {
	for _, rw := range out.Waiters {
		g := s.gets[rw.Token]
		if g == nil || g.done {
			if out.Err == nil {
				release := make([]ids.ObjectID, rw.Pins)
				for i := range release {
					release[i] = out.ID
				}
				_ = s.store.Release(release, rw.Client, s.n.now())
			}
			continue
		}
		if out.Err != nil {
			g.done, g.err = true, out.Err
			if errors.Is(out.Err, errs.ErrNotFound) {
				g.err = &errs.GetTimeoutError{ObjectID: out.ID.String()}
			}
			continue
		}
		for i, id := range g.want {
			if id == out.ID {
				g.locs[i] = out.Location
			}
		}
		delete(g.missing, out.ID)
		if len(g.missing) == 0 {
			g.done = true
		}
	}
}

// delete frees objects (an owner's free reached this node).
func (s *storeParty) delete(idl []ids.ObjectID) {
	s.store.Delete(idl, s.n.now())
	s.flush()
}

// deleteStrays deletes the copies here of objects that live on elsewhere
// (objectstore.Store.DeleteStrays).
func (s *storeParty) deleteStrays(idl []ids.ObjectID) {
	s.store.DeleteStrays(idl, s.n.now())
	s.flush()
}

// clientDisconnected drops a gone client's pins and unsealed objects,
// and frees what it owned.
func (s *storeParty) clientDisconnected(id ids.WorkerID) {
	if !s.n.up {
		return
	}
	s.store.ClientDisconnected(id, s.n.now())
	s.flush()
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// storeClient is runtime.SimStore: a process's client of its node's
// store.
type storeClient struct {
	p *proc
}

func (c *storeClient) party() (*storeParty, error) {
	if !c.p.alive || !c.p.node.up {
		return nil, errs.Unavailablef("object store stopped")
	}
	return c.p.node.store, nil
}

// wireErr gives a store error the form it has after a trip on the wire.
func wireErr(err error) error {
	if err == nil {
		return nil
	}
	return objectstore.ErrorFromProto(errs.ToProto(err))
}

func (c *storeClient) CreateOwned(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID) ([]byte, error) {
	return c.create(ctx, id, size, codec, owner, c.p.id, false)
}

// create makes an object for client (a process, or a node's transfers).
func (c *storeClient) create(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner, client ids.WorkerID, isCopy bool) ([]byte, error) {
	s, err := c.party()
	if err != nil {
		return nil, err
	}
	return s.create(ctx, id, size, codec, owner, client, isCopy)
}

func (s *storeParty) create(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner, client ids.WorkerID, isCopy bool) ([]byte, error) {
	n := s.n
	w := n.w
	if s.failCreates > 0 && !isCopy {
		s.failCreates--
		w.log.add("%s.store creation of %s fails (store-full fault)", n.name, id.Short())
		return nil, wireErr(&errs.ObjectStoreFullError{ObjectID: id.String(), Requested: size, Message: "creation failed by fault injection (a full store)"})
	}
	s.token++
	token := s.token
	req := objectstore.CreateRequest{ID: id, Size: size, Codec: codec, Client: client, Owner: owner, Copy: isCopy,
		Deadline: n.now().Add(CreateTimeout), Token: token}
	loc, queued, err := s.store.Create(req, n.now())
	if err != nil {
		s.flush()
		return nil, wireErr(err)
	}
	if !queued {
		s.place(loc)
		s.flush()
		return s.data[id], nil
	}
	cw := &createWait{}
	s.creates[token] = cw
	s.flush()
	w.log.add("%s.store creation of %s (%d bytes) waits for space", n.name, id.Short(), size)
	w.park(func() bool { return cw.done || ctx.Err() != nil })
	if !cw.done {
		// Its caller gave up (a fetch whose worker died): the request
		// leaves the queue, as the store client's does.
		delete(s.creates, token)
		_ = s.store.Abort(id, client, n.now())
		s.flush()
		return nil, ctx.Err()
	}
	if cw.err != nil {
		return nil, wireErr(cw.err)
	}
	if !n.up || s != n.store {
		return nil, errs.Unavailablef("object store stopped")
	}
	return s.data[id], nil
}

func (c *storeClient) Seal(_ context.Context, id ids.ObjectID) error {
	s, err := c.party()
	if err != nil {
		return err
	}
	err = s.store.Seal(id, c.p.id, s.n.now())
	s.flush()
	return wireErr(err)
}

func (c *storeClient) Abort(_ context.Context, id ids.ObjectID) error {
	s, err := c.party()
	if err != nil {
		return err
	}
	err = s.store.Abort(id, c.p.id, s.n.now())
	s.flush()
	return wireErr(err)
}

func (c *storeClient) PutOwned(ctx context.Context, id ids.ObjectID, codec atollpb.Codec, data []byte, owner ids.WorkerID) error {
	buf, err := c.CreateOwned(ctx, id, uint64(len(data)), codec, owner)
	if err != nil {
		return err
	}
	copy(buf, data)
	if err := c.Seal(ctx, id); err != nil {
		_ = c.Abort(ctx, id)
		return err
	}
	return nil
}

func (c *storeClient) Get(ctx context.Context, idList []ids.ObjectID, timeout time.Duration) ([]objectstore.Object, error) {
	return c.GetWithPriority(ctx, idList, timeout, objectstore.PriorityTaskArgument)
}

func (c *storeClient) GetWithPriority(ctx context.Context, idList []ids.ObjectID, _ time.Duration, priority int32) ([]objectstore.Object, error) {
	s, err := c.party()
	if err != nil {
		return nil, err
	}
	return s.get(ctx, idList, c.p.id, priority)
}

// get pins idList for client, waiting only for restores (a Get without a
// timeout, as every runtime's is).
func (s *storeParty) get(ctx context.Context, idList []ids.ObjectID, client ids.WorkerID, priority int32) ([]objectstore.Object, error) {
	n := s.n
	res := s.store.Get(idList, client, n.now())
	s.flush()
	locs := res.Locations
	if len(res.Missing) > 0 {
		if len(res.Missing) > len(res.Spilled) {
			// Not there, and no timeout: the client finds a missing one
			// and gives the others back.
			first := idList[res.Missing[0]]
			s.releaseLocs(locs, client)
			return nil, &errs.GetTimeoutError{ObjectID: first.String()}
		}
		s.token++
		g := &getWait{client: client, want: idList, locs: locs, missing: map[ids.ObjectID]int{}}
		s.gets[s.token] = g
		pins := map[ids.ObjectID]int{}
		for _, i := range res.Spilled {
			pins[idList[i]]++
		}
		deadline := n.now().Add(CreateTimeout)
		for _, i := range res.Spilled {
			id := idList[i]
			k, ok := pins[id]
			if !ok {
				continue
			}
			delete(pins, id)
			g.missing[id] = k
			req := objectstore.RestoreRequest{ID: id, Waiter: objectstore.RestoreWaiter{Token: s.token, Client: client, Pins: k},
				Priority: priority, Deadline: deadline}
			if err := s.store.Restore(req, n.now()); err != nil {
				g.done, g.err = true, err
				break
			}
		}
		s.flush()
		n.w.log.add("%s.store get waits for %d restores", n.name, len(g.missing))
		n.w.park(func() bool { return g.done })
		delete(s.gets, s.token)
		if g.err != nil {
			if n.up && s == n.store {
				s.releaseLocs(g.locs, client)
			}
			return nil, wireErr(g.err)
		}
		if !n.up || s != n.store {
			return nil, errs.Unavailablef("object store stopped")
		}
		locs = g.locs
	}
	out := make([]objectstore.Object, len(idList))
	for i, loc := range locs {
		out[i] = objectstore.Object{ID: idList[i], Codec: loc.Codec, Data: s.data[loc.ID]}
	}
	return out, nil
}

func (s *storeParty) releaseLocs(locs []objectstore.Location, client ids.WorkerID) {
	var held []ids.ObjectID
	for _, loc := range locs {
		if !loc.ID.IsZero() {
			held = append(held, loc.ID)
		}
	}
	if len(held) > 0 {
		_ = s.store.Release(held, client, s.n.now())
		s.flush()
	}
}

func (c *storeClient) Release(idList ...ids.ObjectID) {
	s, err := c.party()
	if err != nil || len(idList) == 0 {
		return
	}
	if err := s.store.Release(idList, c.p.id, s.n.now()); err != nil {
		s.n.w.log.add("%s.store release by %s: %v", s.n.name, c.p.name, err)
	}
	s.flush()
}

func (c *storeClient) Delete(idList ...ids.ObjectID) { c.p.node.broadcastFree(c.p, idList, false) }
func (c *storeClient) Revive(idList ...ids.ObjectID) { c.p.node.broadcastFree(c.p, idList, true) }
func (c *storeClient) DeleteStrays(node ids.NodeID, idList ...ids.ObjectID) {
	c.p.node.freeStrays(c.p, node, idList)
}

func (c *storeClient) Stats(context.Context) (*atollpb.StoreStats, error) {
	s, err := c.party()
	if err != nil {
		return nil, err
	}
	return s.store.Stats(), nil
}

// disk is a node's simulated spill disk: its files and their bytes, its
// capacity, and the faults the schedule puts on it (full, slow, failing).
type disk struct {
	w        *World
	capacity uint64
	used     uint64
	files    map[string]*diskFile
	seq      int
	// faults: until when writes fail as if the disk were full, the extra
	// latency of each operation until slowUntil, and writes failing with
	// EIO until failUntil.
	fullUntil, slowUntil, failUntil time.Time
	slow                            time.Duration
}

type diskFile struct {
	size uint64
	data []byte
}

func newDisk(w *World, capacity uint64) *disk {
	return &disk{w: w, capacity: capacity, files: map[string]*diskFile{}}
}

func (d *disk) free() uint64 {
	if d.used >= d.capacity {
		return 0
	}
	return d.capacity - d.used
}

// latency of one operation of size bytes (200 MB/s, plus a slow fault's).
func (d *disk) latency(size uint64) time.Duration {
	l := 100*time.Microsecond + d.w.jitter(d.w.rDisk, 2*time.Millisecond) + time.Duration(size)*5*time.Nanosecond
	if d.w.now.Before(d.slowUntil) {
		l += d.slow
	}
	return l
}

// write runs a spill write: decide (with its error, if the disk's faults
// or space say so) after the latency, then done.
func (d *disk) write(n *node, size uint64, do func(error) (spill.Written, error), done func(spill.Written, error)) {
	var err error
	now := d.w.now
	switch {
	case now.Before(d.fullUntil) || d.free() < size:
		err = &fs{op: "write", err: syscall.ENOSPC}
	case now.Before(d.failUntil) && d.w.rDisk.IntN(2) == 0:
		err = &fs{op: "write", err: syscall.EIO}
	}
	d.w.after(d.latency(size), func() {
		wr, err := do(err)
		done(wr, err)
	})
}

// read runs a restore read.
func (d *disk) read(n *node, size uint64, done func(error)) {
	d.w.after(d.latency(size), func() { done(nil) })
}

// fs is a file-system error.
type fs struct {
	op  string
	err error
}

func (e *fs) Error() string { return fmt.Sprintf("spill %s: %v", e.op, e.err) }
func (e *fs) Unwrap() error { return e.err }

// writeFile writes a batch as one file.
func (d *disk) writeFile(b objectstore.SpillBatch, objs [][]byte) spill.Written {
	d.seq++
	name := fmt.Sprintf("spill-%d", d.seq)
	f := &diskFile{}
	wr := spill.Written{File: name}
	for i, loc := range b.Objects {
		ext := spill.Extent{File: name, Offset: uint64(len(f.data)), Length: loc.Length}
		f.data = append(f.data, objs[i]...)
		wr.Extents = append(wr.Extents, ext)
	}
	f.size = uint64(len(f.data))
	wr.Size = f.size
	d.files[name] = f
	d.used += f.size
	return wr
}

func (d *disk) readExtent(ext spill.Extent) ([]byte, error) {
	f := d.files[ext.File]
	if f == nil || ext.Offset+ext.Length > uint64(len(f.data)) {
		return nil, &fs{op: "read", err: syscall.ENOENT}
	}
	return f.data[ext.Offset : ext.Offset+ext.Length], nil
}

func (d *disk) remove(name string) {
	if f := d.files[name]; f != nil {
		d.used -= f.size
		delete(d.files, name)
	}
}

func (d *disk) punch(spill.Extent) {}

// clear drops every file (their process died).
func (d *disk) clear() {
	d.files = map[string]*diskFile{}
	d.used = 0
}
