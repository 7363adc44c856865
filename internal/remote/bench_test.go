package remote

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testtls"
)

// BenchmarkTransfer pulls a 256 MiB object over loopback TCP ("pull",
// with the cluster-key handshake as nodes run it), over mutual TLS
// ("pullTLS"), and, as the baseline, copies the same bytes over a raw
// loopback TCP connection into a preallocated buffer ("rawTCP"). The
// ratios of their MB/s are the protocol's and TLS's overheads.
func BenchmarkTransfer(b *testing.B) {
	const size = 256 << 20
	data := pattern(size, 7)
	dst := make([]byte, size)
	serverTLS, clientTLS, err := testtls.Configs()
	if err != nil {
		b.Fatal(err)
	}
	key := bytes.Repeat([]byte{1}, 32)
	pull := func(b *testing.B, sopts ServerOptions, ccfg ClientConfig) {
		src := newMemSource()
		id := objID(1)
		src.add(id, data)
		srv, err := ListenWith("127.0.0.1:0", src, sopts)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = srv.Close() }()
		c, err := NewClient(ccfg)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		alloc := func(uint64) ([]byte, error) { return dst, nil }
		b.SetBytes(size)
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.Pull(context.Background(), srv.Addr(), id, alloc); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("pull", func(b *testing.B) { pull(b, ServerOptions{Key: key}, ClientConfig{Key: key}) })
	b.Run("pullTLS", func(b *testing.B) {
		pull(b, ServerOptions{Key: key, TLS: serverTLS}, ClientConfig{Key: key, TLS: clientTLS})
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
