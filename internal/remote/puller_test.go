package remote

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/internal/errs"
)

func newTestPuller(t *testing.T, max uint64) *Puller {
	t.Helper()
	p, err := NewPuller(newTestClient(t), PullerConfig{MaxInFlight: max})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPullerDeduplicatesConcurrentPulls(t *testing.T) {
	src := newMemSource()
	src.gate = make(chan struct{})
	srv := startServer(t, src)
	id := objID(1)
	want := pattern(ChunkSize+7, 3)
	src.add(id, want)
	p := newTestPuller(t, 1<<30)

	const readers = 8
	var allocs atomic.Int64
	var dst []byte
	alloc := func(size uint64) ([]byte, error) {
		allocs.Add(1)
		dst = make([]byte, size)
		return dst, nil
	}
	var wg sync.WaitGroup
	errc := make(chan error, readers)
	var sharedCount atomic.Int64
	for range readers {
		wg.Go(func() {
			n, shared, err := p.Pull(context.Background(), srv.Addr(), id, alloc, nil)
			if shared {
				sharedCount.Add(1)
			}
			if err == nil && n != uint64(len(want)) {
				err = errs.Invalidf("n = %d", n)
			}
			errc <- err
		})
	}
	testutil.Eventually(t, "all readers to join", func() bool { return p.Stats().Joined == readers-1 })
	close(src.gate)
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := p.Stats()
	if st.Transfers != 1 || src.opens.Load() != 1 || allocs.Load() != 1 || sharedCount.Load() != readers-1 {
		t.Fatalf("transfers=%d opens=%d allocs=%d shared=%d, want 1/1/1/%d",
			st.Transfers, src.opens.Load(), allocs.Load(), sharedCount.Load(), readers-1)
	}
	if !bytes.Equal(dst, want) {
		t.Fatal("bytes differ")
	}
	// Once finished, a new pull of the same id transfers again.
	if _, shared, err := p.Pull(context.Background(), srv.Addr(), id, alloc, nil); err != nil || shared {
		t.Fatalf("second pull: shared=%v err=%v", shared, err)
	}
	if st := p.Stats(); st.Transfers != 2 {
		t.Fatalf("transfers = %d, want 2", st.Transfers)
	}
}

func TestPullerRespectsMaxInFlight(t *testing.T) {
	const size = 1 << 20
	const admitted, total = 3, 6
	src := newMemSource()
	srv := startServer(t, src)
	p := newTestPuller(t, admitted*size)

	gate := make(chan struct{})
	var entered atomic.Int64
	var violations atomic.Int64
	alloc := func(n uint64) ([]byte, error) {
		if st := p.Stats(); st.InFlight > admitted*size {
			violations.Add(1)
		}
		entered.Add(1)
		<-gate
		return make([]byte, n), nil
	}
	var wg sync.WaitGroup
	errc := make(chan error, total)
	for i := range total {
		id := objID(uint32(i))
		src.add(id, pattern(size, byte(i)))
		wg.Go(func() {
			_, _, err := p.Pull(context.Background(), srv.Addr(), id, alloc, nil)
			errc <- err
		})
	}
	testutil.Eventually(t, "admitted pulls to reach alloc", func() bool { return entered.Load() == admitted })
	testutil.Eventually(t, "the rest to queue", func() bool { return p.Stats().Queued == total-admitted })
	if st := p.Stats(); st.InFlight != admitted*size || entered.Load() != admitted {
		t.Fatalf("inflight=%d entered=%d, want %d and %d", st.InFlight, entered.Load(), admitted*size, admitted)
	}
	close(gate)
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d allocs saw in-flight bytes above the limit", v)
	}
	if st := p.Stats(); st.InFlight != 0 || st.Queued != 0 || st.Transfers != total {
		t.Fatalf("final stats %+v", st)
	}
}

// TestPullerCancelledWaiterDoesNotFailOthers: a creator that leaves
// while another reader waits gets its error at once, the transfer goes
// on into its buffer, and finish runs once, when the last byte is in.
func TestPullerCancelledWaiterDoesNotFailOthers(t *testing.T) {
	src := newMemSource()
	src.gate = make(chan struct{})
	srv := startServer(t, src)
	id := objID(1)
	src.add(id, []byte("shared"))
	p := newTestPuller(t, 1<<20)

	finished := make(chan finishCall, 2)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	var dst []byte
	go func() {
		_, _, err := p.Pull(ctx, srv.Addr(), id, bufAlloc(&dst), recordFinish(finished))
		first <- err
	}()
	testutil.Eventually(t, "transfer to start", func() bool { return p.Stats().Transfers == 1 })
	second := make(chan error, 1)
	go func() {
		_, _, err := p.Pull(context.Background(), srv.Addr(), id, bufAlloc(new([]byte)), recordFinish(finished))
		second <- err
	}()
	testutil.Eventually(t, "second reader to join", func() bool { return p.Stats().Joined == 1 })
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first: %v, want context.Canceled", err)
	}
	select {
	case f := <-finished:
		t.Fatalf("finished (%d bytes, %v) while the transfer was held", f.n, f.err)
	default:
	}
	close(src.gate)
	if err := <-second; err != nil {
		t.Fatalf("second: %v", err)
	}
	if string(dst) != "shared" {
		t.Fatalf("dst = %q", dst)
	}
	if f := <-finished; f.err != nil || f.n != 6 {
		t.Fatalf("finished with %d bytes, %v; want 6, nil", f.n, f.err)
	}
	if len(finished) != 0 {
		t.Fatal("finished twice")
	}
}

// finishCall is one call of a FinishFunc.
type finishCall struct {
	n   uint64
	err error
}

// recordFinish is a FinishFunc that sends its calls to c.
func recordFinish(c chan<- finishCall) FinishFunc {
	return func(n uint64, err error) error {
		c <- finishCall{n, err}
		return err
	}
}

// TestPullerFinishAfterEveryReaderLeft: a transfer its only reader left
// is cancelled and finished with the error, once.
func TestPullerFinishAfterEveryReaderLeft(t *testing.T) {
	src := newMemSource()
	src.gate = make(chan struct{})
	srv := startServer(t, src)
	id := objID(2)
	src.add(id, []byte("alone"))
	p := newTestPuller(t, 1<<20)

	finished := make(chan finishCall, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := p.Pull(ctx, srv.Addr(), id, bufAlloc(new([]byte)), recordFinish(finished))
		done <- err
	}()
	testutil.Eventually(t, "transfer to start", func() bool { return p.Stats().Transfers == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("reader: %v, want context.Canceled", err)
	}
	if f := <-finished; f.err == nil {
		t.Fatalf("a transfer nobody waits for finished with %d bytes and no error", f.n)
	}
	close(src.gate)
	if len(finished) != 0 {
		t.Fatal("finished twice")
	}
}

func TestPullerNotFound(t *testing.T) {
	srv := startServer(t, newMemSource())
	p := newTestPuller(t, 1<<20)
	_, _, err := p.Pull(context.Background(), srv.Addr(), objID(9), bufAlloc(new([]byte)), nil)
	if !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if st := p.Stats(); st.InFlight != 0 {
		t.Fatalf("in flight %d after not found", st.InFlight)
	}
}

func TestConfigValidation(t *testing.T) {
	if _, err := NewClient(ClientConfig{MaxIdlePerAddr: -1}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("NewClient: %v", err)
	}
	c := newTestClient(t)
	if _, err := NewPuller(c, PullerConfig{}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("NewPuller: %v", err)
	}
	if _, err := Listen("127.0.0.1:0", nil); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("Listen: %v", err)
	}
}

// TestPullerCloseWaitsForTransfers: Close returns only once every
// transfer's goroutine is done with the buffer alloc gave it (a node
// unmaps its arena after closing its puller), and later pulls fail with
// UNAVAILABLE.
func TestPullerCloseWaitsForTransfers(t *testing.T) {
	src := newMemSource()
	srv := startServer(t, src)
	id := objID(1)
	src.add(id, pattern(ChunkSize+7, 3))
	p := newTestPuller(t, 1<<30)

	inAlloc, release := make(chan struct{}), make(chan struct{})
	var allocReturned atomic.Bool
	alloc := func(size uint64) ([]byte, error) {
		close(inAlloc)
		<-release
		allocReturned.Store(true)
		return make([]byte, size), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	pulled := make(chan error, 1)
	go func() {
		_, _, err := p.Pull(ctx, srv.Addr(), id, alloc, nil)
		pulled <- err
	}()
	<-inAlloc
	cancel() // the caller gives up; the transfer's goroutine still runs
	if err := <-pulled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned pull: %v, want context.Canceled", err)
	}
	closed := make(chan bool, 1)
	go func() {
		p.Close()
		closed <- allocReturned.Load()
	}()
	close(release)
	if !<-closed {
		t.Fatal("Close returned while a transfer was still in its alloc")
	}
	if _, _, err := p.Pull(context.Background(), srv.Addr(), id, func(n uint64) ([]byte, error) { return make([]byte, n), nil }, nil); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("a pull after Close: %v, want UNAVAILABLE", err)
	}
}
