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
// in the arena, stream over loopback TCP, seal) and reads it in place. The
// baseline, measured in the same run, is a raw loopback TCP copy of the
// same number of bytes into a buffer of the same size. get_copy_GB/s is
// what a Get of the same object, now local, adds: the copy of its bytes
// into a new slice of the caller's (Get copies, GetView does not).
//
//	go test -run '^$' -bench BenchmarkClusterTransfer -benchtime 8x -count 3 .
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

	var pulled, copied, raw time.Duration
	for b.Loop() {
		b.StopTimer()
		ref := makeBytes.Remote(ctx, atoll.Value(size), atoll.OnNode(node, false))
		if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}, atoll.FetchLocal(false)); err != nil {
			b.Fatal(err)
		}
		rawTook := rawLoopbackCopy(b, size)
		b.StartTimer()
		start := time.Now()
		view, err := atoll.GetView(ctx, ref)
		took := time.Since(start)
		b.StopTimer()
		if err != nil || view.Len() != size {
			b.Fatalf("GetView: %d bytes, %v", view.Len(), err)
		}
		view.Release()
		start = time.Now()
		v, err := atoll.Get(ctx, ref)
		copyTook := time.Since(start)
		if err != nil || len(v) != size {
			b.Fatalf("Get: %d bytes, %v", len(v), err)
		}
		pulled += took
		copied += copyTook
		raw += rawTook
		ref.Release()
		b.StartTimer()
	}
	gbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e9 }
	b.SetBytes(size)
	b.ReportMetric(gbps(pulled), "GB/s")
	b.ReportMetric(gbps(raw), "raw_tcp_GB/s")
	b.ReportMetric(gbps(pulled)/gbps(raw), "ratio")
	b.ReportMetric(gbps(copied), "get_copy_GB/s")
}

// rawLoopbackCopy sends n bytes over a fresh loopback TCP connection into
// a preallocated, touched buffer and returns how long it took.
func rawLoopbackCopy(b *testing.B, n int) time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	src := make([]byte, 4<<20)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		for sent := 0; sent < n; sent += len(src) {
			if _, err := conn.Write(src[:min(len(src), n-sent)]); err != nil {
				return
			}
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
