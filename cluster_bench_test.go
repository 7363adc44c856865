package atoll_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
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
// beside the first). raw_tcp_procs_GB/s is the first sent by another
// process over one connection kept open from copy to copy (rawSender),
// as a pull's bytes come from a node's process over a connection its
// puller keeps; its ratio is ratio_procs, and the pull is held to the
// lower of ratio and ratio_procs. get_copy_GB/s is what a Get of the
// same object, now local, adds: the copy of its bytes into a new slice
// of the caller's (Get copies, GetView does not).
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
	// The baselines' memory is filled before the cluster starts, and the
	// nodes are given 10 s to declare one another dead (2 s by default in
	// tests): on this VM a process touching fresh memory can stall for
	// seconds, and a driver's node declared dead ends the benchmark.
	whole, hot := touched(size), touched(4<<20)
	sender := startRawSender(b, size)
	c := testcluster.Start(b, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 1 << 30,
		FailureTimeout: 10 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := atoll.Init(ctx, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(1<<30)); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = atoll.Shutdown(context.Background()) }()
	node := c.Node(1).ID

	// pull makes an object on node 1 and times the raw copies, the pull
	// (GetView) and the Get's copy after it.
	pull := func() (pulled, copied, raw, rawHot, rawProcs time.Duration) {
		ref := makeBytes.Remote(ctx, atoll.Value(size), atoll.OnNode(node, false))
		defer ref.Release()
		if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}, atoll.FetchLocal(false)); err != nil {
			b.Fatal(err)
		}
		raw = rawLoopbackCopy(b, whole, size)
		rawHot = rawLoopbackCopy(b, hot, size)
		rawProcs = sender.copy(b)
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
		return pulled, copied, raw, rawHot, rawProcs
	}
	firstPulled, _, firstRaw, _, _ := pull()

	// ns/op is a whole iteration (the task, the raw copies, the pull and
	// the Get); the figures are timed apart.
	var pulled, copied, raw, rawHot, rawProcs time.Duration
	for b.Loop() {
		p, c, r, h, rp := pull()
		pulled, copied, raw, rawHot, rawProcs = pulled+p, copied+c, raw+r, rawHot+h, rawProcs+rp
	}
	gbps := func(d time.Duration, n int) float64 { return float64(size) * float64(n) / d.Seconds() / 1e9 }
	b.ReportMetric(gbps(pulled, b.N), "GB/s")
	b.ReportMetric(gbps(raw, b.N), "raw_tcp_GB/s")
	b.ReportMetric(gbps(pulled, b.N)/gbps(raw, b.N), "ratio")
	b.ReportMetric(gbps(rawHot, b.N), "raw_tcp_hot_GB/s")
	b.ReportMetric(gbps(pulled, b.N)/gbps(rawHot, b.N), "ratio_hot")
	b.ReportMetric(gbps(rawProcs, b.N), "raw_tcp_procs_GB/s")
	b.ReportMetric(gbps(pulled, b.N)/gbps(rawProcs, b.N), "ratio_procs")
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

// rawSenderEnv tells this binary, run again as TestHelperRawTCPSender,
// where to send and how many bytes: "ADDRESS BYTES".
const rawSenderEnv = "ATOLL_TEST_RAW_TCP_SENDER"

// rawSender is a process of its own (this binary run again as
// TestHelperRawTCPSender) that sends n bytes over one loopback TCP
// connection each time it is asked: the connection stays open from copy
// to copy, as the connections a node pulls over do.
type rawSender struct {
	cmd  *exec.Cmd
	conn net.Conn
	dst  []byte // preallocated and touched
}

// startRawSender starts the sender of n bytes a copy; it stops when b
// ends.
func startRawSender(b *testing.B, n int) *rawSender {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRawTCPSender$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", rawSenderEnv, ln.Addr(), n))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute))
	conn, err := ln.Accept()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatal(err)
	}
	s := &rawSender{cmd: cmd, conn: conn, dst: touched(n)}
	b.Cleanup(func() {
		_ = conn.Close() // the sender's next read ends, and so does it
		if err := cmd.Wait(); err != nil {
			b.Errorf("the sender process: %v", err)
		}
	})
	return s
}

// copy asks the sender for its bytes and times them into s.dst.
func (s *rawSender) copy(b *testing.B) time.Duration {
	_ = s.conn.SetDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	if _, err := s.conn.Write([]byte{1}); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(s.conn, s.dst); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// TestHelperRawTCPSender is the sender of BenchmarkClusterTransfer's
// two-process baseline, run only as its child: it fills a source of the
// size asked and connects, then sends the source in 4 MiB writes each
// time it reads a byte, until the connection closes.
func TestHelperRawTCPSender(t *testing.T) {
	var addr string
	var n int
	if _, err := fmt.Sscan(os.Getenv(rawSenderEnv), &addr, &n); err != nil {
		t.Skip("the sender process of BenchmarkClusterTransfer's two-process baseline")
	}
	src := touched(n)
	conn, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ask [1]byte
	for {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
		if _, err := io.ReadFull(conn, ask[:]); err != nil {
			return // the benchmark is done
		}
		for sent := 0; sent < n; sent += 4 << 20 {
			if _, err := conn.Write(src[sent:min(sent+4<<20, n)]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// touched returns n bytes with every page written.
func touched(n int) []byte {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i)
	}
	return buf
}
