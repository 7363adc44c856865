package objectstore

import (
	"time"

	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// The spiller is the store actor's child that does the spill file I/O, so
// that a write of a 100 MiB batch or a read of a large object never holds
// up the store's decisions. It reads and writes the arena through views the
// store hands it; the store guarantees those blocks stay put (the objects
// are marked spilling or restoring) until the spiller has answered.
//
// Work is served in this order: restores, highest priority first (a Get
// blocks on them); then removals of dead spill files and punches of freed
// objects' extents (cheap, and they give disk space back); then spill
// writes, in the order they were asked for. Each answer goes to the
// parent (the store actor), and with it the disk space of the spill
// directories (statfs) after every write and every run of removals, so
// the store plans no file the disk cannot hold.

// spillWrite asks the spiller to write one batch into one file.
type spillWrite struct {
	batch   uint64
	objects []spill.Object // views of the arena, in file order
}

// spillWritten is the spiller's answer to a spillWrite.
type spillWritten struct {
	batch      uint64
	written    spill.Written
	err        error
	bytes      uint64
	start, end time.Time
	// space is the disk space measured right after the write.
	space diskSpace
}

// restoreRead asks the spiller to read an object into its new block.
type restoreRead struct {
	ticket   uint64
	id       ids.ObjectID
	priority int32
	extent   spill.Extent
	dst      []byte // view of the arena block, len == extent.Length
}

// restoreReadDone is the spiller's answer to a restoreRead.
type restoreReadDone struct {
	ticket     uint64
	id         ids.ObjectID
	err        error
	bytes      uint64
	start, end time.Time
}

// removeSpillFile asks the spiller to delete a spill file; no answer (a
// failure is logged).
type removeSpillFile struct{ name string }

// punchSpillFile asks the spiller to give back the disk space of an
// extent of a spill file (an object freed while others in the file live
// on); no answer (a failure is logged).
type punchSpillFile struct{ ext spill.Extent }

// diskSpace is the disk space of the spill directories, measured by the
// spiller after a write, or after the removals and punches it was asked
// for: ok is false if the target cannot tell.
type diskSpace struct {
	free, total uint64
	ok          bool
}

// measure returns the target's disk space, if it can tell.
func measure(t spill.Target) diskSpace {
	sp, ok := t.(spill.Space)
	if !ok {
		return diskSpace{}
	}
	free, total, err := sp.Space()
	if err != nil {
		return diskSpace{}
	}
	return diskSpace{free: free, total: total, ok: true}
}

// spillerTick makes the spiller take its next piece of work. It is sent to
// itself, behind the requests already in its mailbox, so that the queue
// sees them all before it chooses.
type spillerTick struct{}

// spillerState is the spiller's queue of work and its open files. It is
// created with the spiller and outlives restarts of the actor by its
// supervisor.
type spillerState struct {
	target  spill.Target
	faults  SpillFaults // nil: none
	reads   []*restoreRead
	removes []spillFree
	writes  []*spillWrite
	ticking bool // a spillerTick is in the mailbox
	files   openFiles
}

func newSpillerProps(target spill.Target, faults SpillFaults) *actor.Props {
	st := &spillerState{target: target, faults: faults}
	return actor.PropsFromProducer(func() actor.Actor { return &spillerActor{st: st} })
}

// maxOpenFiles is how many spill files the spiller keeps open between
// restores: restoring the objects of one file one by one then costs one
// open, not one per object.
const maxOpenFiles = 8

// openFiles is a small cache of open spill files, least recently used
// first.
type openFiles struct {
	names []string
	files []spill.Readable
}

func (c *openFiles) get(t spill.Target, name string) (spill.Readable, error) {
	for i, n := range c.names {
		if n == name {
			r := c.files[i]
			c.drop(i)
			c.names, c.files = append(c.names, name), append(c.files, r)
			return r, nil
		}
	}
	r, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	if len(c.names) == maxOpenFiles {
		_ = c.files[0].Close()
		c.drop(0)
	}
	c.names, c.files = append(c.names, name), append(c.files, r)
	return r, nil
}

// close closes name if it is open.
func (c *openFiles) close(name string) {
	for i, n := range c.names {
		if n == name {
			_ = c.files[i].Close()
			c.drop(i)
			return
		}
	}
}

func (c *openFiles) closeAll() {
	for _, r := range c.files {
		_ = r.Close()
	}
	c.names, c.files = nil, nil
}

func (c *openFiles) drop(i int) {
	c.names = append(c.names[:i], c.names[i+1:]...)
	c.files = append(c.files[:i], c.files[i+1:]...)
}

// spillFree is a removal of a spill file (ext.File alone), or a punch of
// an extent of one (punch set).
type spillFree struct {
	ext   spill.Extent
	punch bool
}

type spillerActor struct{ st *spillerState }

// Receive implements actor.Actor.
func (a *spillerActor) Receive(ctx actor.Context) {
	st := a.st
	switch m := ctx.Message().(type) {
	case *actor.Restarting:
		// The message that failed may have been the tick.
		st.ticking = false
		return
	case *actor.Stopped:
		st.files.closeAll()
		return
	case *spillWrite:
		st.writes = append(st.writes, m)
	case *restoreRead:
		st.reads = append(st.reads, m)
	case *removeSpillFile:
		st.removes = append(st.removes, spillFree{ext: spill.Extent{File: m.name}})
	case *punchSpillFile:
		st.removes = append(st.removes, spillFree{ext: m.ext, punch: true})
	case *spillerTick:
		st.ticking = false
		if reply := st.runNext(ctx.Logger()); reply != nil {
			ctx.Send(ctx.Parent(), reply)
		}
	}
	if !st.ticking && len(st.reads)+len(st.removes)+len(st.writes) > 0 {
		st.ticking = true
		ctx.Send(ctx.Self(), &spillerTick{})
	}
}

// runNext does the most urgent piece of work and returns the answer for
// the store, if it gets one. A panic in the I/O code is turned into an
// error answer, so the store never waits for an answer that will not come.
// Among restores, the highest priority goes first, then the oldest.
func (st *spillerState) runNext(log *slog.Logger) (reply any) {
	switch {
	case len(st.reads) > 0:
		best := 0
		for i, r := range st.reads {
			if r.priority > st.reads[best].priority {
				best = i
			}
		}
		r := st.reads[best]
		st.reads = append(st.reads[:best], st.reads[best+1:]...)
		start := time.Now()
		err := guard(func() error {
			if st.faults != nil {
				st.faults.BeforeRead()
			}
			f, err := st.files.get(st.target, r.extent.File)
			if err != nil {
				return err
			}
			if err = spill.ReadExtent(f, r.extent, r.dst); err != nil {
				// The handle may be what is broken: open afresh next time.
				st.files.close(r.extent.File)
			}
			return err
		})
		return &restoreReadDone{ticket: r.ticket, id: r.id, err: err, bytes: uint64(len(r.dst)), start: start, end: time.Now()}
	case len(st.removes) > 0:
		f := st.removes[0]
		st.removes = st.removes[1:]
		name := f.ext.File
		if f.punch {
			if p, ok := st.target.(spill.Puncher); ok {
				if err := guard(func() error { return p.Punch(name, f.ext.Offset, f.ext.Length) }); err != nil {
					log.Warn("objectstore: free space in spill file", slog.String("file", name), slog.Any("err", err))
				}
			}
		} else {
			st.files.close(name)
			if err := guard(func() error { return st.target.Remove(name) }); err != nil {
				log.Warn("objectstore: remove spill file", slog.String("file", name), slog.Any("err", err))
			}
		}
		if len(st.removes) == 0 {
			// Space came back: tell the store once the run is done.
			if sp := measure(st.target); sp.ok {
				return &sp
			}
		}
		return nil
	case len(st.writes) > 0:
		w := st.writes[0]
		st.writes = st.writes[1:]
		var written spill.Written
		start := time.Now()
		err := guard(func() (err error) {
			if st.faults != nil {
				if err := st.faults.BeforeWrite(); err != nil {
					return err
				}
			}
			written, err = spill.WriteBatch(st.target, w.objects)
			return err
		})
		var n uint64
		for _, o := range w.objects {
			n += uint64(len(o.Data))
		}
		end := time.Now()
		return &spillWritten{batch: w.batch, written: written, err: err, bytes: n, start: start, end: end, space: measure(st.target)}
	}
	return nil
}

// guard runs f and turns a panic into an error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("objectstore: spill I/O panicked: %v", r)
		}
	}()
	return f()
}
