package objectstore

import "fmt"

// checkInvariants panics if the Store's bookkeeping is inconsistent. It runs
// after every operation in invariants builds and compiles to nothing
// otherwise.
func (s *Store) checkInvariants() {
	if !invariantsEnabled {
		return
	}
	if err := s.check(); err != nil {
		panic("objectstore: store invariant violated: " + err.Error())
	}
}

// check verifies the Store: the allocator tiles the arena, used bytes equal
// the sum of the resident objects' blocks, every resident object owns its
// block, pin counts per client add up to the object's count and none is
// negative, and the derived counters (sealed, pinned bytes) match; then the
// spilling state (checkSpill).
func (s *Store) check() error {
	if err := s.alloc.check(); err != nil {
		return fmt.Errorf("allocator: %w", err)
	}
	var sum, pinned, sealed uint64
	resident := 0
	pinsOf := make(map[*object]int, len(s.objects))
	for id, o := range s.objects {
		if o.loc.ID != id {
			return fmt.Errorf("object %s filed under %s", o.loc.ID, id)
		}
		if o.block != BlockSize(o.loc.Length) {
			return fmt.Errorf("object %s: block of %d bytes for length %d", id, o.block, o.loc.Length)
		}
		if o.resident {
			if size, ok := s.alloc.SizeOf(o.loc.Offset); !ok || size != o.block {
				return fmt.Errorf("object %s: block at %d of %d bytes not allocated as such", id, o.loc.Offset, o.block)
			}
			sum += o.block
			resident++
		} else if o.disk == nil || !o.sealed || o.pins != 0 || o.io != ioNone {
			return fmt.Errorf("object %s: not in memory, yet disk copy %v, sealed %v, %d pins, io %d", id, o.disk != nil, o.sealed, o.pins, o.io)
		}
		if o.pins < 0 {
			return fmt.Errorf("object %s: negative pin count %d", id, o.pins)
		}
		if !o.sealed && o.pins != 0 {
			return fmt.Errorf("object %s: unsealed but pinned", id)
		}
		if o.pins > 0 && o.io == ioRestoring {
			return fmt.Errorf("object %s: pinned while being restored", id)
		}
		if o.pins > 0 {
			pinned += o.block
		}
		if o.sealed {
			sealed++
		} else if cs := s.clients[o.creator]; cs == nil {
			return fmt.Errorf("object %s: unsealed, creator %s unknown", id, o.creator)
		} else if _, ok := cs.creating[id]; !ok {
			return fmt.Errorf("object %s: unsealed, not listed as created by %s", id, o.creator)
		}
	}
	if sum != s.alloc.Used() {
		return fmt.Errorf("used %d bytes, objects' blocks sum to %d", s.alloc.Used(), sum)
	}
	if s.alloc.Allocated() != resident {
		return fmt.Errorf("%d blocks allocated for %d objects in memory", s.alloc.Allocated(), resident)
	}
	if pinned != s.pinnedBytes || sealed != s.numSealed {
		return fmt.Errorf("pinned %d/%d bytes, sealed %d/%d (counted/recorded)", pinned, s.pinnedBytes, sealed, s.numSealed)
	}
	for c, cs := range s.clients {
		for id, n := range cs.pins {
			o, ok := s.objects[id]
			if !ok || n <= 0 {
				return fmt.Errorf("client %s holds %d pins on object %s (present: %v)", c, n, id, ok)
			}
			pinsOf[o] += n
		}
		for id := range cs.creating {
			if o, ok := s.objects[id]; !ok || o.sealed || o.creator != c {
				return fmt.Errorf("client %s listed as creating object %s", c, id)
			}
		}
	}
	for id, o := range s.objects {
		if pinsOf[o] != o.pins {
			return fmt.Errorf("object %s: %d pins, clients hold %d", id, o.pins, pinsOf[o])
		}
	}
	if s.pending.Len() != len(s.pending.byID) {
		return fmt.Errorf("pending queue of %d, index of %d", s.pending.Len(), len(s.pending.byID))
	}
	var waiting uint64
	for e := s.pending.order.Front(); e != nil; e = e.Next() {
		waiting += BlockSize(e.Value.(queuedCreate).req.Size)
	}
	if waiting != s.pending.bytes {
		return fmt.Errorf("pending queue waits for %d bytes, records %d", waiting, s.pending.bytes)
	}
	return s.checkSpill()
}

// checkSpill verifies the spilling state: objects in flight are exactly
// those of the batches and restores under way, spill files count their
// live objects, queued restores are of spilled objects, and every counter
// of bytes matches the objects.
func (s *Store) checkSpill() error {
	sp := s.spill
	if sp == nil {
		for id, o := range s.objects {
			if !o.resident || o.io != ioNone || o.disk != nil {
				return fmt.Errorf("object %s: spill state in a store that does not spill", id)
			}
		}
		return nil
	}
	inBatch := make(map[*object]bool)
	var spilling uint64
	for b, objs := range sp.batches {
		for _, o := range objs {
			if inBatch[o] || o.io != ioSpilling || s.objects[o.loc.ID] != o {
				return fmt.Errorf("batch %d: object %s twice, not spilling or not in the store", b, o.loc.ID)
			}
			inBatch[o] = true
			spilling += o.block
		}
	}
	if spilling != sp.spillingBytes {
		return fmt.Errorf("spilling %d bytes, records %d", spilling, sp.spillingBytes)
	}
	var spillingDisk uint64
	for _, objs := range sp.batches {
		spillingDisk += batchFileSize(objs)
	}
	if spillingDisk != sp.spillingDisk {
		return fmt.Errorf("spill files in flight of %d bytes, records %d", spillingDisk, sp.spillingDisk)
	}
	live := make(map[*spillFile]int)
	var diskBytes, diskObjects, fileBytes uint64
	for id, o := range s.objects {
		switch o.io {
		case ioSpilling:
			if !inBatch[o] || !o.resident || !o.sealed {
				return fmt.Errorf("object %s: spilling outside a batch, or not a sealed object in memory", id)
			}
		case ioRestoring:
			r := sp.restores.byID[id]
			if r == nil || r.ticket == 0 || !o.resident || o.disk == nil {
				return fmt.Errorf("object %s: restoring without a read under way", id)
			}
		}
		if o.disk != nil {
			if sp.files[o.disk.file.name] != o.disk.file {
				return fmt.Errorf("object %s: disk copy in unknown file %s", id, o.disk.file.name)
			}
			if o.disk.ext.Length != o.loc.Length || o.disk.ext.File != o.disk.file.name {
				return fmt.Errorf("object %s: extent %+v for %d bytes", id, o.disk.ext, o.loc.Length)
			}
			live[o.disk.file]++
			diskBytes += o.loc.Length
			diskObjects++
		}
	}
	for name, f := range sp.files {
		if f.live <= 0 || live[f] != f.live || f.name != name {
			return fmt.Errorf("spill file %s: %d live objects recorded, %d found", name, f.live, live[f])
		}
		fileBytes += f.size
	}
	if diskBytes != sp.diskBytes || diskObjects != sp.diskObjects || fileBytes != sp.fileBytes {
		return fmt.Errorf("on disk: %d bytes/%d objects/%d file bytes recorded %d/%d/%d", diskBytes, diskObjects, fileBytes, sp.diskBytes, sp.diskObjects, sp.fileBytes)
	}
	q := &sp.restores
	if q.queued.Len()+len(q.reading) != len(q.byID) {
		return fmt.Errorf("restores: %d queued + %d reading, %d indexed", q.queued.Len(), len(q.reading), len(q.byID))
	}
	var queuedBytes uint64
	for id, r := range q.byID {
		o := s.objects[id]
		if o == nil || !o.sealed || o.disk == nil || r.id != id {
			return fmt.Errorf("restore of object %s, which is not a spilled object", id)
		}
		for _, w := range r.waiters {
			if w.Pins <= 0 {
				return fmt.Errorf("restore of object %s: waiter with %d pins", id, w.Pins)
			}
		}
		if r.ticket != 0 {
			if q.reading[r.ticket] != r || o.io != ioRestoring {
				return fmt.Errorf("restore of object %s: ticket %d not reading", id, r.ticket)
			}
			continue
		}
		if o.resident || o.io != ioNone || o.deleted || !q.queued.Has(r) {
			return fmt.Errorf("queued restore of object %s: in memory %v, io %d, deleted %v", id, o.resident, o.io, o.deleted)
		}
		queuedBytes += o.block
	}
	if queuedBytes != q.bytes {
		return fmt.Errorf("queued restores wait for %d bytes, record %d", queuedBytes, q.bytes)
	}
	return nil
}
