package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// quota accounts for the work other nodes forwarded here (the gateway's
// inbound entries), by origin node and in all, so that a peer cannot grow
// this node's state without bound: a peer forwarding tasks that no node
// can run once grew a node's heap by 155 MiB with 10,000 of them, every
// one held and placed again on every peer view, forever. An arrival is
// admitted while it keeps its origin under MaxForwardedPerOrigin tasks and
// MaxForwardedBytesPerOrigin bytes of specs and the node under
// MaxForwarded and MaxForwardedBytes; the gateway refuses the others back
// to their owners with RESOURCE_EXHAUSTED. Work leaves the account when
// its result goes back, or when its origin dies. Part of the Forwarder;
// not safe for concurrent use.
type quota struct {
	cfg *ForwarderConfig
	// by holds what each origin has here; total all of it.
	by    map[ids.NodeID]*use
	total use
	// refused counts refusals since the node started; unlogged the
	// refusals per origin not yet logged (one warning per lease tick, not
	// one per task).
	refused  uint64
	unlogged map[ids.NodeID]int
	// others counts the unlogged refusals of origins past maxLoggedOrigins
	// (origin ids are what messages claim: the log keeps no more of them).
	others int
}

// maxLoggedOrigins bounds the origins whose refusals are counted apart
// between two warnings.
const maxLoggedOrigins = 1024

// use is an amount of held work: attempts and the encoded bytes of their
// specs.
type use struct {
	n     int
	bytes int64
}

func newQuota(cfg *ForwarderConfig) *quota {
	return &quota{cfg: cfg, by: map[ids.NodeID]*use{}, unlogged: map[ids.NodeID]int{}}
}

// admit accounts for an attempt of size bytes from origin and returns ""
// if it fits every quota; otherwise it accounts for nothing, counts the
// refusal and returns why.
func (q *quota) admit(origin ids.NodeID, size int64) string {
	u := q.by[origin]
	if u == nil {
		u = &use{}
	}
	c := q.cfg
	var why string
	switch {
	case u.n+1 > c.MaxForwardedPerOrigin:
		why = fmt.Sprintf("it holds %d tasks and calls from node %s, its quota per origin (%s)", u.n, origin.Short(), EnvMaxForwardedPerOrigin)
	case u.bytes+size > int64(c.MaxForwardedBytesPerOrigin):
		why = fmt.Sprintf("it holds %d bytes of task specs from node %s and this one has %d, past its quota per origin of %d bytes (%s)",
			u.bytes, origin.Short(), size, c.MaxForwardedBytesPerOrigin, EnvMaxForwardedBytesPerOrigin)
	case q.total.n+1 > c.MaxForwarded:
		why = fmt.Sprintf("it holds %d tasks and calls forwarded by other nodes, its overall quota (%s)", q.total.n, EnvMaxForwarded)
	case q.total.bytes+size > int64(c.MaxForwardedBytes):
		why = fmt.Sprintf("it holds %d bytes of task specs forwarded by other nodes and this one has %d, past its overall quota of %d bytes (%s)",
			q.total.bytes, size, c.MaxForwardedBytes, EnvMaxForwardedBytes)
	}
	if why != "" {
		q.refused++
		if _, ok := q.unlogged[origin]; ok || len(q.unlogged) < maxLoggedOrigins {
			q.unlogged[origin]++
		} else {
			q.others++
		}
		return why
	}
	u.n++
	u.bytes += size
	q.by[origin] = u
	q.total.n++
	q.total.bytes += size
	return ""
}

// release takes an attempt of size bytes from origin out of the account.
func (q *quota) release(origin ids.NodeID, size int64) {
	u := q.by[origin]
	if u == nil {
		return
	}
	u.n--
	u.bytes -= size
	q.total.n--
	q.total.bytes -= size
	if u.n <= 0 {
		delete(q.by, origin)
	}
}

// takeUnlogged returns the refusals not yet logged, in all and by origin
// ("a1b2c3d4=9000 ..." for the eight origins refused most), and forgets
// them.
func (q *quota) takeUnlogged() (n int, origins string) {
	if len(q.unlogged) == 0 {
		return 0, ""
	}
	keys := slices.SortedFunc(maps.Keys(q.unlogged), func(a, b ids.NodeID) int {
		return cmp.Or(cmp.Compare(q.unlogged[b], q.unlogged[a]), strings.Compare(a.String(), b.String()))
	})
	var sb strings.Builder
	for i, k := range keys {
		n += q.unlogged[k]
		if i < 8 {
			if i > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%s=%d", k.Short(), q.unlogged[k])
		}
	}
	if len(keys) > 8 || q.others > 0 {
		sb.WriteString(" and others")
	}
	n += q.others
	q.others = 0
	clear(q.unlogged)
	return n, sb.String()
}
