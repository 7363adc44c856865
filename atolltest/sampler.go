package atolltest

import (
	"context"
	"os"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/runtime"
	"github.com/atoll-runtime/atoll/memsample"
)

// SampleMemory starts sampling the object-store use of every node of this
// driver's cluster every interval (Dask's MemorySampler; see package
// memsample) and returns the running sampler, once it has taken its first
// sample. Sampling goes on until the sampler's Stop, the end of ctx, or
// Shutdown (which stops every sampler still running); Stop returns the
// samples:
//
//	s, err := atolltest.SampleMemory(ctx, 100*time.Millisecond)
//	... the workload ...
//	samples := s.Stop()
//	fmt.Println("peak cluster store use:", samples.Peak().Bytes)
//	err = samples.WriteSVG(f, memsample.SVGOptions{Title: "AMM on"})
//
// A driver joined to a cluster (atoll.WithAddress) samples the load
// reports of every node, its own included; the embedded single node (Init
// with no address) samples its own store, as the one node of its cluster.
// It fails with ErrInvalidArgument for an interval that is not positive or
// in a worker process, and ErrNotInitialized before Init.
func SampleMemory(ctx context.Context, interval time.Duration) (*memsample.Sampler, error) {
	d, err := runtime.DriverOf(ctx, "SampleMemory")
	if err != nil {
		return nil, err
	}
	opts := memsample.Options{Interval: interval, Logger: d.Log()}
	var s *memsample.Sampler
	if n, cerr := d.ClusterNode("SampleMemory"); cerr == nil {
		s, err = memsample.New(n.Conn(), opts)
	} else {
		s, err = memsample.NewFromSource(localStore{d}, opts)
	}
	if err != nil {
		return nil, err
	}
	if !d.AddSampler(s) {
		return nil, errs.ErrNotInitialized
	}
	if err := s.Start(ctx); err != nil {
		d.RemoveSampler(s)
		return nil, err
	}
	return s, nil
}

// localStore reads the embedded node's store for a sampler.
type localStore struct{ d *runtime.Driver }

func (l localStore) Read(ctx context.Context) ([]memsample.Reading, error) {
	st, _, err := l.d.Memory(ctx)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return []memsample.Reading{{NodeID: l.d.NodeID().String(), Role: memsample.RoleHead, Hostname: host,
		Used: st.UsedBytes, Capacity: st.CapacityBytes, Spilled: st.SpilledBytesCurrent}}, nil
}
