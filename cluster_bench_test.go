package atoll_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// BenchmarkClusterTransfer measures node-to-node object transfer through
// the whole runtime: a task on a node process produces a 256 MiB object,
// and the driver's GetView pulls it into the driver's node (fetch, create
// in the arena, stream over loopback TCP, seal) and reads it in place.
//
// The baselines, measured in the same iteration: raw_tcp_GB/s is a raw
// loopback TCP copy of the same number of bytes, sent from a buffer of
// that size, into a buffer of that size already touched (what a program
// moving a 256 MiB value without atoll gets); raw_tcp_hot_GB/s sends the
// same 4 MiB buffer again and again, which stays in the processor's cache
// (faster than any real 256 MiB transfer: a narrower baseline, kept
// beside the first). get_copy_GB/s is what a Get of the same object, now
// local, adds: the copy of its bytes into a new slice of the caller's (Get
// copies, GetView does not).
//
// The timed pulls come after one pull that is not timed, as the
// baselines' buffers are touched before they are timed: the first pull
// into a new node's store also faults in fresh pages of its arena (unless
// the store is prefaulted). That pull's own figures are reported apart
// (first_pull_GB/s, first_ratio).
//
//	go test -run '^$' -bench BenchmarkClusterTransfer -benchtime 10x -count 6 .
func BenchmarkClusterTransfer(b *testing.B) {
	const size = 256 << 20
	c := testcluster.Start(b, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 1 << 30}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := atoll.Init(ctx, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(1<<30)); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = atoll.Shutdown(context.Background()) }()
	node := c.Node(1).ID
	whole, hot := touched(size), touched(4<<20)

	// pull makes an object on node 1 and times the raw copies, the pull
	// (GetView) and the Get's copy after it.
	pull := func() (pulled, copied, raw, rawHot time.Duration) {
		ref := makeBytes.Remote(ctx, atoll.Value(size), atoll.OnNode(node, false))
		defer ref.Release()
		if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}, atoll.FetchLocal(false)); err != nil {
			b.Fatal(err)
		}
		raw = rawLoopbackCopy(b, whole, size)
		rawHot = rawLoopbackCopy(b, hot, size)
		start := time.Now()
		view, err := atoll.GetView(ctx, ref)
		pulled = time.Since(start)
		if err != nil || view.Len() != size {
			b.Fatalf("GetView: %d bytes, %v", view.Len(), err)
		}
		view.Release()
		start = time.Now()
		v, err := atoll.Get(ctx, ref)
		copied = time.Since(start)
		if err != nil || len(v) != size {
			b.Fatalf("Get: %d bytes, %v", len(v), err)
		}
		return pulled, copied, raw, rawHot
	}
	firstPulled, _, firstRaw, _ := pull()

	// ns/op is a whole iteration (the task, both raw copies, the pull and
	// the Get); the figures are timed apart.
	var pulled, copied, raw, rawHot time.Duration
	for b.Loop() {
		p, c, r, h := pull()
		pulled, copied, raw, rawHot = pulled+p, copied+c, raw+r, rawHot+h
	}
	gbps := func(d time.Duration, n int) float64 { return float64(size) * float64(n) / d.Seconds() / 1e9 }
	b.ReportMetric(gbps(pulled, b.N), "GB/s")
	b.ReportMetric(gbps(raw, b.N), "raw_tcp_GB/s")
	b.ReportMetric(gbps(pulled, b.N)/gbps(raw, b.N), "ratio")
	b.ReportMetric(gbps(rawHot, b.N), "raw_tcp_hot_GB/s")
	b.ReportMetric(gbps(pulled, b.N)/gbps(rawHot, b.N), "ratio_hot")
	b.ReportMetric(gbps(copied, b.N), "get_copy_GB/s")
	b.ReportMetric(gbps(firstPulled, 1), "first_pull_GB/s")
	b.ReportMetric(gbps(firstPulled, 1)/gbps(firstRaw, 1), "first_ratio")
}

// rawLoopbackCopy sends n bytes over a fresh loopback TCP connection into
// a preallocated, touched buffer and returns how long it took. The bytes
// sent are src's, chunk after chunk: a source of n bytes of its own is
// what a program moving an n-byte value without atoll sends from; a
// smaller one, sent again and again, stays in the processor's cache.
func rawLoopbackCopy(b *testing.B, src []byte, n int) time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		for sent := 0; sent < n; {
			off := sent % len(src)
			chunk := src[off:min(off+4<<20, len(src), off+n-sent)]
			if _, err := conn.Write(chunk); err != nil {
				return
			}
			sent += len(chunk)
		}
	}()
	dst := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		dst[i] = 1
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.ReadFull(conn, dst); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// touched returns n bytes with every page written.
func touched(n int) []byte {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i)
	}
	return buf
}
