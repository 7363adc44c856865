package gcs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// store is the durable side of the tables: one JetStream KV bucket per
// table, keyed by the hex id. Only the GCS actor uses it.
type store struct {
	nodes, actors, jobs jetstream.KeyValue
	// streams holds the stream behind each bucket, by bucket name.
	streams map[string]jetstream.Stream
}

// openStore creates (or updates) the three buckets, sized by cfg. A
// bucket created by an earlier version without limits gets them.
func openStore(ctx context.Context, nc *nats.Conn, cfg Config) (*store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("gcs: jetstream: %w", err)
	}
	s := store{streams: map[string]jetstream.Stream{}}
	bucket := func(name, what string, maxBytes int) (jetstream.KeyValue, error) {
		// No TTL: live nodes, actors and jobs must persist as long as
		// they live; the dead ones are pruned by count (Config.MaxDead*).
		kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:       name,
			Description:  "atoll GCS " + what + " table",
			History:      1,
			Storage:      jetstream.FileStorage,
			Replicas:     cfg.Replicas,
			MaxBytes:     int64(maxBytes),
			MaxValueSize: int32(cfg.MaxEntryBytes),
		})
		if isJSError(err, jsStorageResourcesExceeded) {
			return nil, fmt.Errorf("gcs: bucket %s of %d bytes: the NATS server cannot reserve that much file storage (raise its JetStream max_storage, or lower %s, %s, %s): %w",
				name, maxBytes, EnvNodesBucketBytes, EnvActorsBucketBytes, EnvJobsBucketBytes, err)
		}
		if err != nil {
			return nil, fmt.Errorf("gcs: bucket %s: %w", name, err)
		}
		if s.streams[name], err = js.Stream(ctx, "KV_"+name); err != nil {
			return nil, fmt.Errorf("gcs: bucket %s: %w", name, err)
		}
		return kv, nil
	}
	if s.nodes, err = bucket(nodesBucket(cfg.Prefix), "node", cfg.NodesBucketBytes); err != nil {
		return nil, err
	}
	if s.actors, err = bucket(actorsBucket(cfg.Prefix), "actor", cfg.ActorsBucketBytes); err != nil {
		return nil, err
	}
	if s.jobs, err = bucket(jobsBucket(cfg.Prefix), "job", cfg.JobsBucketBytes); err != nil {
		return nil, err
	}
	return &s, nil
}

// load reads every entry of the three buckets into fresh tables. Entries
// that do not decode, or whose key does not match their id, are logged and
// skipped: one bad entry must not keep the GCS down.
func (s *store) load(ctx context.Context, log *slog.Logger) (*tables, error) {
	t := newTables()
	err := loadBucket(ctx, s.nodes, log, func(k string, b []byte) error {
		n := &atollpb.NodeInfo{}
		if err := decodeEntry(k, b, n, "node", n.GetNodeId); err != nil {
			return err
		}
		t.putNode(k, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = loadBucket(ctx, s.actors, log, func(k string, b []byte) error {
		a := &atollpb.ActorInfo{}
		if err := decodeEntry(k, b, a, "actor", a.GetActorId); err != nil {
			return err
		}
		t.putActor(k, a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = loadBucket(ctx, s.jobs, log, func(k string, b []byte) error {
		j := &atollpb.JobInfo{}
		if err := decodeEntry(k, b, j, "job", j.GetJobId); err != nil {
			return err
		}
		t.putJob(k, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// decodeEntry unmarshals b into m and checks that the id of m is k.
func decodeEntry(k string, b []byte, m proto.Message, kind string, id func() []byte) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return err
	}
	got, err := key(kind, id())
	if err != nil {
		return err
	}
	if got != k {
		return fmt.Errorf("entry holds %s %s", kind, got)
	}
	return nil
}

// loadBucket calls apply for the latest value of every key of kv.
func loadBucket(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger, apply func(key string, value []byte) error) error {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("gcs: load %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("gcs: load %s: watcher closed", kv.Bucket())
			}
			if e == nil { // every initial value has been delivered
				return nil
			}
			if err := apply(e.Key(), e.Value()); err != nil {
				log.Warn("gcs: skipping bad entry", "bucket", kv.Bucket(), "key", e.Key(), "err", err)
			}
		case <-ctx.Done():
			return fmt.Errorf("gcs: load %s: %w", kv.Bucket(), ctx.Err())
		}
	}
}

// bucket is the KV bucket of a table.
func (s *store) bucket(t table) jetstream.KeyValue {
	switch t {
	case nodesTable:
		return s.nodes
	case actorsTable:
		return s.actors
	}
	return s.jobs
}

// remove deletes k from kv without leaving a delete marker: the bucket
// keeps one message per key (History 1), and purging the key's subject
// from the bucket's stream removes it, so forgotten entries take no space
// and a restarted GCS does not reload them. (kv.Delete and kv.Purge would
// leave a marker per key, a leak of its own.)
func (s *store) remove(ctx context.Context, kv jetstream.KeyValue, k string) error {
	return s.streams[kv.Bucket()].Purge(ctx, jetstream.WithPurgeSubject("$KV."+kv.Bucket()+"."+k))
}

// JetStream API error codes the store tells apart.
const (
	// jsMaxBytesExceeded: the stream is at its MaxBytes (a full bucket).
	jsMaxBytesExceeded jetstream.ErrorCode = 10077
	// jsStorageResourcesExceeded: the server cannot reserve a stream's
	// MaxBytes.
	jsStorageResourcesExceeded jetstream.ErrorCode = 10047
)

func isJSError(err error, code jetstream.ErrorCode) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == code
}

// put writes m under k. An entry larger than maxEntry is INVALID_ARGUMENT
// and a full bucket RESOURCE_EXHAUSTED; other failures are returned as
// they are.
func put(ctx context.Context, kv jetstream.KeyValue, k string, m proto.Message, maxEntry int) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > maxEntry {
		return errs.Invalidf("gcs: a %d-byte entry for %s/%s exceeds the largest the GCS takes, %d bytes (%s)", len(b), kv.Bucket(), k, maxEntry, EnvMaxEntryBytes)
	}
	_, err = kv.Put(ctx, k, b)
	if isJSError(err, jsMaxBytesExceeded) || isJSError(err, jetstream.JSErrCodeStreamMessageExceedsMaximum) {
		return errs.Exhaustedf("gcs: bucket %s is full: no room for %s (%v); dead entries are pruned by count (%s, ...), or raise its size (%s, %s, %s)",
			kv.Bucket(), k, err, EnvMaxDeadNodes, EnvNodesBucketBytes, EnvActorsBucketBytes, EnvJobsBucketBytes)
	}
	return err
}
