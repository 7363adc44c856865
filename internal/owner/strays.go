package owner

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Strays: copies of objects this process owns that its records do not
// know of. An attempt that ended without its result (lost on the way,
// or failed after storing some returns) may have left copies in stores,
// and so may a value dropped for a rebuild: the record is marked, and
// freeing it frees them everywhere. An attempt failed as lost may also
// finish late, on its node, after its task moved on: its late result
// says where the copy is, and that node's copy goes.

// lateResult looks at the result of an attempt the Table no longer
// waits for (failed already, the task retried or finished, its returns
// maybe freed) for returns it stored: an attempt whose result was lost
// on its way (FORWARD_LOST past its lease) may still finish on the node
// it ran on, and store there under the ids the retry's returns have. A
// return the record places elsewhere, or no longer has, leaves that copy
// behind, so it goes (FreeStrays on that node only); one whose record is
// pending (a retry or rebuild under way, which may run on that same
// node) is marked strays instead, and freeing it frees every copy. A
// duplicate of the result the record holds names the record's own node,
// and frees nothing.
func (t *Table) lateResult(id ids.TaskID, res *atollpb.TaskResult) {
	if res.Error != nil || len(res.Returns) == 0 {
		return
	}
	var strays []ids.ObjectID
	var on ids.NodeID
	for i, r := range res.Returns {
		st := r.GetValue().GetStored()
		if st == nil {
			continue
		}
		at := t.cfg.Node
		if len(st.NodeId) > 0 {
			n, err := ids.FromBytes(st.NodeId)
			if err != nil {
				continue
			}
			at = n
		}
		rid := ids.ReturnObjectID(id, i)
		if o := t.objects[rid]; o != nil {
			switch {
			case o.borrowed:
				continue
			case !o.ready():
				o.strays = true
				continue
			case t.storedOn(o.value) == at:
				continue // the copy the record holds
			}
		}
		if len(strays) > 0 && at != on {
			t.emit(FreeStrays{Node: on, Objects: strays})
			strays = nil
		}
		on = at
		strays = append(strays, rid)
	}
	if len(strays) > 0 {
		t.emit(FreeStrays{Node: on, Objects: strays})
	}
}

// storedOn is the node whose store holds v's primary copy (zero: v is
// not stored).
func (t *Table) storedOn(v *atollpb.Value) ids.NodeID {
	st := v.GetStored()
	switch {
	case st == nil:
		return ids.NodeID{}
	case len(st.NodeId) == 0:
		return t.cfg.Node
	}
	n, _ := ids.FromBytes(st.NodeId)
	return n
}

// strayedCode reports whether an attempt that failed with code may have
// left objects in stores its owner was not told of (strayed).
func strayedCode(code atollpb.ErrorCode) bool {
	switch code {
	case atollpb.ErrorCode_FORWARD_LOST, atollpb.ErrorCode_WORKER_CRASHED, atollpb.ErrorCode_OBJECT_STORE_FULL:
		return true
	}
	return false
}

// strayed records that an attempt of tk failed in a way that may have
// left copies of its returns in stores: its result was lost on the way
// (FORWARD_LOST: the node running it stopped confirming it, and may have
// finished it), or it stored some returns before it failed (a worker
// that crashed, a later return the store could not take). Freeing the
// returns frees those copies too; returns nobody references any more
// are freed now.
func (t *Table) strayed(tk *task, code atollpb.ErrorCode) {
	if !strayedCode(code) {
		return
	}
	var gone []ids.ObjectID
	for i := range int(tk.nReturns) {
		rid := tk.returnID(i)
		if o := t.objects[rid]; o != nil {
			o.strays = true
		} else {
			gone = append(gone, rid)
		}
	}
	t.free(gone)
}
