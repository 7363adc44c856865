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
// the sum of the objects' blocks, every object owns its block, pin counts
// per client add up to the object's count and none is negative, and the
// derived counters (sealed, pinned bytes) match.
func (s *Store) check() error {
	if err := s.alloc.check(); err != nil {
		return fmt.Errorf("allocator: %w", err)
	}
	var sum, pinned, sealed uint64
	pinsOf := make(map[*object]int, len(s.objects))
	for id, o := range s.objects {
		if o.loc.ID != id {
			return fmt.Errorf("object %s filed under %s", o.loc.ID, id)
		}
		if size, ok := s.alloc.SizeOf(o.loc.Offset); !ok || size != o.block || o.block != BlockSize(o.loc.Length) {
			return fmt.Errorf("object %s: block at %d of %d bytes not allocated as such", id, o.loc.Offset, o.block)
		}
		if o.pins < 0 {
			return fmt.Errorf("object %s: negative pin count %d", id, o.pins)
		}
		if !o.sealed && o.pins != 0 {
			return fmt.Errorf("object %s: unsealed but pinned", id)
		}
		sum += o.block
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
	if s.alloc.Allocated() != len(s.objects) {
		return fmt.Errorf("%d blocks allocated for %d objects", s.alloc.Allocated(), len(s.objects))
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
	return nil
}
