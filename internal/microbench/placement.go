package microbench

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/natsembed"
)

// placement_group_create/removal (Ray's "placement group create/removal"):
// one op creates placementGroups groups of one bundle each (a hundredth
// of a CPU: Ray's {"custom": 0.001}), waits until every one is ready, then
// removes them all. Its baseline is the durable floor of the same work:
// one JetStream KV write and one purge per group on an embedded NATS
// server, as the head's placement manager does for a creation and a
// removal.

func placementShape(e *env) map[string]any {
	return map[string]any{"groups": e.shapes.placementGroups, "bundles": 1, "bundle": "CPU=0.01", "strategy": "PACK"}
}

func placementGroups(_ context.Context, e *env) (*workload, error) {
	n := e.shapes.placementGroups
	pgs := make([]*atoll.PlacementGroup, n)
	return &workload{units: float64(n), op: func(ctx context.Context) error {
		for i := range pgs {
			pg, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 0.01}}, atoll.PlacementPack)
			if err != nil {
				return err
			}
			pgs[i] = pg
		}
		for _, pg := range pgs {
			if err := pg.Ready(ctx); err != nil {
				return err
			}
		}
		for _, pg := range pgs {
			if err := pg.Remove(ctx); err != nil {
				return err
			}
		}
		return nil
	}}, nil
}

func placementGroupsBase(ctx context.Context, e *env) (*workload, error) {
	kv, stream, err := e.kvBucket(ctx)
	if err != nil {
		return nil, err
	}
	n := e.shapes.placementGroups
	val := make([]byte, 160) // about a group's entry
	return &workload{units: float64(n), op: func(ctx context.Context) error {
		for i := range n {
			if _, err := kv.Put(ctx, fmt.Sprintf("g%d", i), val); err != nil {
				return err
			}
		}
		for i := range n {
			if err := stream.Purge(ctx, jetstream.WithPurgeSubject(fmt.Sprintf("$KV.%s.g%d", kv.Bucket(), i))); err != nil {
				return err
			}
		}
		return nil
	}}, nil
}

// kvEnv is the baseline's embedded NATS server and bucket.
type kvEnv struct {
	once   sync.Once
	err    error
	dir    string
	srv    *natsembed.Server
	nc     *nats.Conn
	kv     jetstream.KeyValue
	stream jetstream.Stream
}

// kvBucket starts the baseline's NATS server (in a temporary directory)
// on first use.
func (e *env) kvBucket(ctx context.Context) (jetstream.KeyValue, jetstream.Stream, error) {
	k := &e.kv
	k.once.Do(func() {
		if k.dir, k.err = os.MkdirTemp("", "atoll-microbench-"); k.err != nil {
			return
		}
		if k.srv, k.err = natsembed.Start(natsembed.Config{StoreDir: k.dir}); k.err != nil {
			return
		}
		if k.nc, k.err = k.srv.Connect(); k.err != nil {
			return
		}
		js, err := jetstream.New(k.nc)
		if err != nil {
			k.err = err
			return
		}
		if k.kv, k.err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "microbench_pgs", History: 1,
			Storage: jetstream.FileStorage, MaxBytes: 64 << 20}); k.err != nil {
			return
		}
		k.stream, k.err = js.Stream(ctx, "KV_microbench_pgs")
	})
	return k.kv, k.stream, k.err
}

func (k *kvEnv) close() {
	if k.nc != nil {
		k.nc.Close()
	}
	if k.srv != nil {
		k.srv.Shutdown()
	}
	if k.dir != "" {
		_ = os.RemoveAll(k.dir)
	}
}
