package objectstore

import (
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// The store actor's side of spilling: it spawns the spiller, hands it the
// Store's spill and restore effects, feeds its answers back into the Store,
// and answers the Gets that waited for restores.

// startSpiller spawns the spiller child, if spilling is on, and lets the
// Store start I/O again.
func (st *storeState) startSpiller(ctx actor.Context) {
	if st.target == nil {
		return
	}
	props := newSpillerProps(st.target, st.cfg.SpillFaults)
	pid, err := ctx.SpawnNamed(props, "spiller")
	if err != nil {
		// The name is taken only if an old spiller is still registered;
		// an anonymous child does the same work.
		pid = ctx.Spawn(props)
	}
	st.spiller = pid
	// No write is in flight: the disk as it is now is what the store
	// plans against.
	if sp := measure(st.target); sp.ok {
		st.store.SetDiskSpace(sp.free, sp.total, st.now())
	}
	st.store.resumeIO(st.now())
}

// diskSpace records the spill disk's space the spiller measured.
func (st *storeState) diskSpace(m *diskSpace) {
	if m.ok {
		st.store.SetDiskSpace(m.free, m.total, st.now())
		st.rearm()
	}
}

// restoreFor asks the Store to restore the spilled objects a waiting Get
// (token) misses, at the Get's priority. Each restore may wait for space as
// long as a creation would.
func (st *storeState) restoreFor(ctx actor.Context, token uint64, client ids.WorkerID, idList []ids.ObjectID, spilled []int, priority int32, now time.Time) {
	pins := make(map[ids.ObjectID]int, len(spilled))
	for _, i := range spilled {
		pins[idList[i]]++
	}
	deadline := now.Add(st.cfg.CreateTimeout)
	for _, i := range spilled {
		id := idList[i]
		n, ok := pins[id]
		if !ok {
			continue // asked for already (a duplicate id)
		}
		delete(pins, id)
		req := RestoreRequest{ID: id, Waiter: RestoreWaiter{Token: token, Client: client, Pins: n}, Priority: priority, Deadline: deadline}
		if err := st.store.Restore(req, now); err != nil {
			// Only a bookkeeping bug gets here: Get just reported the
			// object as spilled.
			if w := st.gets.get(token); w != nil {
				st.gets.remove(w)
				st.answerGet(ctx, token, w.locations, err)
			}
			return
		}
	}
	st.rearm()
}

// spillWritten feeds a spill write's outcome into the Store.
func (st *storeState) spillWritten(ctx actor.Context, m *spillWritten) {
	if m.err != nil {
		ctx.Logger().Warn("objectstore: spill failed; the objects stay in memory", slog.Int("objects", len(m.written.Extents)), slog.Any("err", m.err))
	}
	if st.cfg.OnIO != nil && !m.start.IsZero() {
		st.cfg.OnIO(IOEvent{Kind: IOSpill, Objects: len(m.written.Extents), Bytes: m.bytes, Start: m.start, End: m.end, Err: m.err})
	}
	if m.space.ok {
		// Measured after this write and before the next: the batches
		// still in flight are not in it. SpillDone plans with it.
		st.store.noteDiskSpace(m.space.free, m.space.total)
	}
	if err := st.store.SpillDone(m.batch, m.written, m.err, st.now()); errors.Is(err, errStaleIO) && m.err == nil {
		// Written for a batch the store gave up on: nothing refers to
		// the file.
		st.removeFile(ctx, m.written.File)
	}
	st.rearm()
}

// restoreReadDone feeds a restore's outcome into the Store.
func (st *storeState) restoreReadDone(ctx actor.Context, m *restoreReadDone) {
	if m.err != nil {
		ctx.Logger().Warn("objectstore: restore failed; the object stays on disk", slog.String("object", m.id.String()), slog.Any("err", m.err))
	}
	if st.cfg.OnIO != nil && !m.start.IsZero() {
		st.cfg.OnIO(IOEvent{Kind: IORestore, Object: m.id, Objects: 1, Bytes: m.bytes, Start: m.start, End: m.end, Err: m.err})
	}
	_ = st.store.RestoreDone(m.ticket, m.err, st.now()) // stale: ignored
}

func (st *storeState) removeFile(ctx actor.Context, name string) {
	if st.spiller != nil {
		ctx.Send(st.spiller, &removeSpillFile{name: name})
		return
	}
	// No spiller (the store is stopping): remove it here.
	if err := st.target.Remove(name); err != nil {
		ctx.Logger().Warn("objectstore: remove spill file", slog.String("file", name), slog.Any("err", err))
	}
}

func (e *Effects) hasSpillWork() bool {
	return len(e.Spills)+len(e.Restores)+len(e.Restored)+len(e.RemoveFiles)+len(e.Punches) > 0
}

// flushSpill carries out the spill effects: batches and reads go to the
// spiller (reads into blocks reserved first, so a restore never raises
// SIGBUS), outcomes of restores answer their Gets, dead files are removed.
func (st *storeState) flushSpill(ctx actor.Context, eff Effects) {
	if st.spiller == nil && len(eff.Spills)+len(eff.Restores) > 0 {
		// Only a bookkeeping bug gets here (the Store starts no I/O
		// while no spiller runs): fail the work rather than lose it.
		noSpiller := errors.New("objectstore: no spiller running")
		for _, b := range eff.Spills {
			_ = st.store.SpillDone(b.ID, spill.Written{}, noSpiller, st.now())
		}
		for _, r := range eff.Restores {
			_ = st.store.RestoreDone(r.Ticket, noSpiller, st.now())
		}
		eff.Spills, eff.Restores = nil, nil
	}
	for _, b := range eff.Spills {
		objs := make([]spill.Object, len(b.Objects))
		for i, loc := range b.Objects {
			objs[i] = spill.Object{ID: loc.ID, Data: st.arena.Bytes(loc.Offset, loc.Length)}
		}
		ctx.Send(st.spiller, &spillWrite{batch: b.ID, objects: objs})
	}
	for _, r := range eff.Restores {
		loc := r.Location
		if err := st.arena.Reserve(loc.Offset, loc.Length); err != nil {
			_ = st.store.RestoreDone(r.Ticket, err, st.now())
			continue
		}
		ctx.Send(st.spiller, &restoreRead{ticket: r.Ticket, id: loc.ID, priority: r.Priority, extent: r.Extent, dst: st.arena.Bytes(loc.Offset, loc.Length)})
	}
	for _, out := range eff.Restored {
		st.restored(ctx, out)
	}
	for _, name := range eff.RemoveFiles {
		st.removeFile(ctx, name)
	}
	if st.spiller != nil {
		for _, ext := range eff.Punches {
			ctx.Send(st.spiller, &punchSpillFile{ext: ext})
		}
	}
}

// restored answers the Gets a restore was for. On success the Store pinned
// the object for each of them; a Get that no longer waits gives its pins
// back. A restore of an object deleted meanwhile leaves the Gets with a
// deadline waiting (the object may be created again), and answers the
// others with the object missing.
func (st *storeState) restored(ctx actor.Context, out RestoreOutcome) {
	if out.Err == nil {
		done, orphans := st.gets.restored(out)
		for _, rw := range orphans {
			release := make([]ids.ObjectID, rw.Pins)
			for i := range release {
				release[i] = out.ID
			}
			_ = st.store.Release(release, rw.Client, st.now())
		}
		for _, w := range done {
			st.answerGet(ctx, w.token, w.locations, nil)
		}
		return
	}
	gone := errors.Is(out.Err, errs.ErrNotFound)
	for _, rw := range out.Waiters {
		w := st.gets.get(rw.Token)
		if w == nil || (gone && !w.deadline.IsZero()) {
			continue
		}
		st.gets.remove(w)
		var err error
		if !gone {
			err = out.Err
		}
		st.answerGet(ctx, w.token, w.locations, err)
	}
}
