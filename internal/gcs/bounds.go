package gcs

import (
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Bounds on what clients can make the GCS hold. Anything on the cluster's
// NATS can register nodes, actors and jobs, and each entry lives in the
// head's memory and in a KV bucket until it dies (or finishes); the dead
// ones are pruned by count (Config.MaxDeadNodes, ...). The live ones are
// bounded here: a new live entry is refused with RESOURCE_EXHAUSTED past
// its table's cap (Config.MaxNodes, MaxActors, MaxJobs), or when it would
// take the table's entries past three quarters of its bucket's MaxBytes.
// The last quarter is headroom for updates: JetStream refuses any write
// that does not fit a full bucket, a node's death or an actor's new state
// included, and those must not fail. The bucket's MaxBytes stays as the
// hard bound should the estimate below fall short.

// entryOverhead estimates what JetStream's file store adds to an entry's
// value: the record header, the subject ($KV.<bucket>.<32 hex digits>)
// and the checksum.
const entryOverhead = 96

// budgetShare is the share of a bucket's MaxBytes new entries may fill.
const budgetNum, budgetDen = 3, 4

// budget is the bytes new entries of a table may fill in a bucket of
// maxBytes.
func budget(maxBytes int) int64 { return int64(maxBytes) / budgetDen * budgetNum }

// entryBytes estimates what m takes in its bucket (0 for none).
func entryBytes(m proto.Message) int64 {
	if m == nil || !m.ProtoReflect().IsValid() {
		return 0
	}
	return int64(proto.Size(m)) + entryOverhead
}

// account replaces old by next (either may be nil) in table tb's bytes.
func (t *tables) account(tb table, old, next proto.Message) {
	t.bytes[tb] += entryBytes(next) - entryBytes(old)
}

// live counts the entries of tb that are not dead (or finished).
func (t *tables) live(tb table) int {
	switch tb {
	case nodesTable:
		return len(t.nodes) - t.deadNodes.len()
	case actorsTable:
		return len(t.actors) - t.deadActors.len()
	}
	return len(t.jobs) - t.finishedJobs.len()
}

// admit checks that next, the entry k of table tb, fits the bounds: no
// entry may be larger than the largest a bucket takes, a new key (known
// false) must fit the table's byte budget, and an entry that becomes live
// (comesAlive) its cap of live entries.
func (t *tables) admit(tb table, k string, next proto.Message, known, comesAlive bool) error {
	caps := [numTables]struct {
		n    int
		what string
		env  string
	}{{t.caps.Nodes, "live nodes", EnvMaxNodes}, {t.caps.Actors, "live actors", EnvMaxActors}, {t.caps.Jobs, "running jobs", EnvMaxJobs}}
	c := caps[tb]
	if size := proto.Size(next); t.caps.Entry > 0 && size > t.caps.Entry {
		return errs.Invalidf("%s %s refused: its %d-byte entry exceeds the largest the GCS takes, %d bytes (%s)", tb.entry(), k, size, t.caps.Entry, EnvMaxEntryBytes)
	}
	if live := t.live(tb); comesAlive && c.n > 0 && live >= c.n {
		return errs.Exhaustedf("%s %s refused: the GCS holds %d %s, its cap (%s)", tb.entry(), k, live, c.what, c.env)
	}
	if b := t.caps.Bytes[tb]; !known && b > 0 && t.bytes[tb]+entryBytes(next) > b {
		return errs.Exhaustedf("%s %s refused: the %s table takes %d bytes of the %d it may fill in its bucket (the rest is kept for updates; %s, %s, %s)",
			tb.entry(), k, tb, t.bytes[tb], b, EnvNodesBucketBytes, EnvActorsBucketBytes, EnvJobsBucketBytes)
	}
	return nil
}

// entry names one entry of the table.
func (k table) entry() string { return [...]string{"node", "actor", "job"}[k] }
