package objectstore

import (
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// getWaiter is a Get that waits for objects not sealed yet, or spilled
// ones being restored. The objects it already found are pinned for its
// client; the others are pinned as they are sealed or restored.
type getWaiter struct {
	token  uint64
	client ids.WorkerID
	// deadline is when the Get gives up; zero: it waits for its restores
	// however long they take (they fail on their own if they cannot get
	// space).
	deadline time.Time
	// locations in request order; filled as objects are found.
	locations []Location
	// missing maps each id still awaited to its indexes in the request.
	missing map[ids.ObjectID][]int
}

// getWaiters is the set of waiting Gets, indexed by the ids they await. Like
// Store it is pure: the actor feeds it seals, the clock and disconnects.
type getWaiters struct {
	byToken  map[uint64]*getWaiter
	byObject map[ids.ObjectID][]*getWaiter
}

func newGetWaiters() *getWaiters {
	return &getWaiters{
		byToken:  make(map[uint64]*getWaiter),
		byObject: make(map[ids.ObjectID][]*getWaiter),
	}
}

// add registers a Get whose first attempt left res.Missing unresolved.
func (g *getWaiters) add(token uint64, client ids.WorkerID, idList []ids.ObjectID, res GetResult, deadline time.Time) {
	w := &getWaiter{
		token:     token,
		client:    client,
		deadline:  deadline,
		locations: res.Locations,
		missing:   make(map[ids.ObjectID][]int),
	}
	for _, i := range res.Missing {
		id := idList[i]
		if len(w.missing[id]) == 0 {
			g.byObject[id] = append(g.byObject[id], w)
		}
		w.missing[id] = append(w.missing[id], i)
	}
	g.byToken[token] = w
}

// restored fills in the object of a successful restore for the Gets it was
// restored for (the store pinned it for them) and returns the Gets that now
// have everything, removed from the set, plus the waiters whose Get is no
// longer waiting for it: their pins must be released.
func (g *getWaiters) restored(out RestoreOutcome) (done []*getWaiter, orphans []RestoreWaiter) {
	for _, rw := range out.Waiters {
		w := g.byToken[rw.Token]
		idxs := []int(nil)
		if w != nil {
			idxs = w.missing[out.ID]
		}
		if len(idxs) != rw.Pins {
			orphans = append(orphans, rw)
			continue
		}
		for _, i := range idxs {
			w.locations[i] = out.Location
		}
		g.resolved(w, out.ID)
		if len(w.missing) == 0 {
			delete(g.byToken, w.token)
			done = append(done, w)
		}
	}
	return done, orphans
}

// resolved removes id from what w awaits.
func (g *getWaiters) resolved(w *getWaiter, id ids.ObjectID) {
	delete(w.missing, id)
	list := g.byObject[id]
	for k, other := range list {
		if other == w {
			list = append(list[:k], list[k+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(g.byObject, id)
	} else {
		g.byObject[id] = list
	}
}

// get returns the waiting Get of token, if it still waits.
func (g *getWaiters) get(token uint64) *getWaiter { return g.byToken[token] }

// sealed pins the newly sealed object for every Get waiting on it and
// returns the Gets that now have everything, removed from the set.
func (g *getWaiters) sealed(st *Store, id ids.ObjectID, now time.Time) []*getWaiter {
	waiting := g.byObject[id]
	if len(waiting) == 0 {
		return nil
	}
	delete(g.byObject, id)
	var done []*getWaiter
	for _, w := range waiting {
		idxs := w.missing[id]
		want := make([]ids.ObjectID, len(idxs))
		for k := range want {
			want[k] = id
		}
		res := st.Get(want, w.client, now)
		if len(res.Missing) > 0 {
			// Deleted as it was sealed: nothing was pinned; keep waiting
			// in case it is created again.
			g.byObject[id] = append(g.byObject[id], w)
			continue
		}
		for k, i := range idxs {
			w.locations[i] = res.Locations[k]
		}
		delete(w.missing, id)
		if len(w.missing) == 0 {
			delete(g.byToken, w.token)
			done = append(done, w)
		}
	}
	return done
}

// remove drops w from the set.
func (g *getWaiters) remove(w *getWaiter) {
	delete(g.byToken, w.token)
	for id := range w.missing {
		list := g.byObject[id]
		for k, other := range list {
			if other == w {
				list = append(list[:k], list[k+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(g.byObject, id)
		} else {
			g.byObject[id] = list
		}
	}
}

// removeIf removes and returns the Gets matching f.
func (g *getWaiters) removeIf(f func(*getWaiter) bool) []*getWaiter {
	var out []*getWaiter
	for _, w := range g.byToken {
		if f(w) {
			out = append(out, w)
		}
	}
	for _, w := range out {
		g.remove(w)
	}
	return out
}

// expire removes and returns the Gets whose deadline is not after now.
func (g *getWaiters) expire(now time.Time) []*getWaiter {
	return g.removeIf(func(w *getWaiter) bool { return !w.deadline.IsZero() && !w.deadline.After(now) })
}

// removeClient removes and returns the Gets of a client.
func (g *getWaiters) removeClient(c ids.WorkerID) []*getWaiter {
	return g.removeIf(func(w *getWaiter) bool { return w.client == c })
}

// all removes and returns every Get.
func (g *getWaiters) all() []*getWaiter {
	return g.removeIf(func(*getWaiter) bool { return true })
}

// nextDeadline returns the earliest deadline of the waiting Gets.
func (g *getWaiters) nextDeadline() (time.Time, bool) {
	var earliest time.Time
	for _, w := range g.byToken {
		if !w.deadline.IsZero() && (earliest.IsZero() || w.deadline.Before(earliest)) {
			earliest = w.deadline
		}
	}
	return earliest, !earliest.IsZero()
}

// firstMissing returns one id the Get still waits for, for error messages.
func (w *getWaiter) firstMissing() ids.ObjectID {
	first := -1
	var id ids.ObjectID
	for oid, idxs := range w.missing {
		if first < 0 || idxs[0] < first {
			first, id = idxs[0], oid
		}
	}
	return id
}
