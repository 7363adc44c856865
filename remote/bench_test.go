package remote

import (
	"context"
	"io"
	"net"
	"testing"
)

// BenchmarkTransfer pulls a 256 MiB object over loopback TCP ("pull") and,
// as the baseline, copies the same bytes over a raw loopback TCP
// connection into a preallocated buffer ("rawTCP"). The ratio of their
// MB/s is the protocol's overhead.
func BenchmarkTransfer(b *testing.B) {
	const size = 256 << 20
	data := pattern(size, 7)
	dst := make([]byte, size)

	b.Run("pull", func(b *testing.B) {
		src := newMemSource()
		id := objID(1)
		src.add(id, data)
		srv := startServer(b, src)
		c := newTestClient(b)
		alloc := func(uint64) ([]byte, error) { return dst, nil }
		b.SetBytes(size)
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.Pull(context.Background(), srv.Addr(), id, alloc); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("rawTCP", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		done := make(chan struct{})
		go func() {
			defer close(done)
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer func() { _ = conn.Close() }()
			var req [1]byte
			for {
				if _, err := io.ReadFull(conn, req[:]); err != nil {
					return
				}
				if _, err := conn.Write(data); err != nil {
					return
				}
			}
		}()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		b.ResetTimer()
		for b.Loop() {
			if _, err := conn.Write([]byte{1}); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(conn, dst); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		_ = conn.Close()
		<-done
	})
}
