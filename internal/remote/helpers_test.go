package remote

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// memSource is an in-memory ObjectSource that counts opens and releases.
type memSource struct {
	mu       sync.Mutex
	objs     map[ids.ObjectID][]byte
	gate     chan struct{} // if non-nil, Open waits for it to close
	opens    atomic.Int64
	releases atomic.Int64
}

func newMemSource() *memSource { return &memSource{objs: make(map[ids.ObjectID][]byte)} }

func (s *memSource) add(id ids.ObjectID, b []byte) {
	s.mu.Lock()
	s.objs[id] = b
	s.mu.Unlock()
}

func (s *memSource) Open(ctx context.Context, id ids.ObjectID) ([]byte, func(), error) {
	s.opens.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	s.mu.Lock()
	b, ok := s.objs[id]
	s.mu.Unlock()
	if !ok {
		return nil, nil, errs.NotFoundf("object %x", id[:])
	}
	return b, func() { s.releases.Add(1) }, nil
}

func objID(i uint32) ids.ObjectID { return ids.PutObjectID(ids.NewTaskID(), i) }

// pattern returns n deterministic, position-dependent bytes.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func startServer(t testing.TB, src ObjectSource) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newTestClient(t testing.TB) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func bufAlloc(dst *[]byte) AllocFunc {
	return func(size uint64) ([]byte, error) {
		*dst = make([]byte, size)
		return *dst, nil
	}
}

// timedPulls makes n pulls of id from srv, each tenth on a new client (a
// new connection through the handshake), the others on the client's
// pooled one, and returns their durations by kind and the failures.
func timedPulls(b *testing.B, srv *Server, id ids.ObjectID, n int) (pooled, dialed []time.Duration, failed int) {
	var c *Client
	for i := range n {
		if i%10 == 0 {
			if c != nil {
				_ = c.Close()
			}
			var err error
			if c, err = NewClient(ClientConfig{Key: keyOf(1)}); err != nil {
				b.Fatal(err)
			}
		}
		var got []byte
		start := time.Now()
		if _, err := c.Pull(context.Background(), srv.Addr(), id, bufAlloc(&got)); err != nil {
			failed++
			continue
		}
		if i%10 == 0 {
			dialed = append(dialed, time.Since(start))
		} else {
			pooled = append(pooled, time.Since(start))
		}
	}
	_ = c.Close()
	return pooled, dialed, failed
}
