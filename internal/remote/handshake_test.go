package remote

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/testtls"
)

// quick is the handshake timeout of tests whose peers never complete it.
const quick = 300 * time.Millisecond

func keyOf(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func clientWith(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestHandshake: a client with the server's key pulls; one with another
// key, or none, gets nothing (and the server counts it), and a server
// without the key cannot serve a client that requires one.
func TestHandshake(t *testing.T) {
	src := newMemSource()
	id := objID(1)
	want := pattern(1<<20, 3)
	src.add(id, want)
	srv := listenWith(t, src, ServerOptions{Key: keyOf(1)})
	ctx := context.Background()

	var got []byte
	if _, err := clientWith(t, ClientConfig{Key: keyOf(1)}).Pull(ctx, srv.Addr(), id, bufAlloc(&got)); err != nil {
		t.Fatalf("pull with the right key: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("pull with the right key: wrong bytes")
	}
	if _, err := clientWith(t, ClientConfig{Key: keyOf(2)}).Pull(ctx, srv.Addr(), id, bufAlloc(&got)); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("pull with a wrong key: %v, want ErrUnauthenticated", err)
	}
	if _, err := clientWith(t, ClientConfig{}).Pull(ctx, srv.Addr(), id, bufAlloc(&got)); err == nil {
		t.Fatal("pull without a key from a server that requires one succeeded")
	}
	testutil.Eventually(t, "two unauthenticated connections counted", func() bool { return srv.Unauthenticated() == 2 })
	if n := src.opens.Load(); n != 1 {
		t.Fatalf("the source was opened %d times; only the authenticated pull may open it", n)
	}

	// A server that does not hold the key cannot pass itself off as a
	// node of the cluster.
	open := listenWith(t, src, ServerOptions{})
	if _, err := clientWith(t, ClientConfig{Key: keyOf(1), HandshakeTimeout: quick}).Pull(ctx, open.Addr(), id, bufAlloc(&got)); err == nil {
		t.Fatal("a client that requires the key pulled from a server without it")
	}
}

// TestHandshakeStalledPeer: a peer that connects and says nothing is
// closed by the handshake deadline, not kept.
func TestHandshakeStalledPeer(t *testing.T) {
	srv := listenWith(t, newMemSource(), ServerOptions{Key: keyOf(1), HandshakeTimeout: quick})
	c := dial(t, srv)
	closedByServer(t, c, "a silent peer")
	testutil.Eventually(t, "the silent peer counted", func() bool { return srv.Unauthenticated() == 1 })
}

// TestTLS: mutual TLS with the key handshake on top; a plaintext client
// is refused.
func TestTLS(t *testing.T) {
	serverTLS, clientTLS, err := testtls.Configs()
	if err != nil {
		t.Fatal(err)
	}
	src := newMemSource()
	id := objID(1)
	want := pattern(9<<20, 5) // more than two chunks
	src.add(id, want)
	srv := listenWith(t, src, ServerOptions{Key: keyOf(1), TLS: serverTLS, HandshakeTimeout: quick})
	ctx := context.Background()
	var got []byte
	c := clientWith(t, ClientConfig{Key: keyOf(1), TLS: clientTLS})
	for range 2 { // the second pull reuses the pooled TLS connection
		if _, err := c.Pull(ctx, srv.Addr(), id, bufAlloc(&got)); err != nil {
			t.Fatalf("pull over TLS: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatal("pull over TLS: wrong bytes")
		}
	}
	if _, err := clientWith(t, ClientConfig{Key: keyOf(1), HandshakeTimeout: quick}).Pull(ctx, srv.Addr(), id, bufAlloc(&got)); err == nil {
		t.Fatal("a plaintext pull from a TLS server succeeded")
	}
	noCert := clientTLS.Clone()
	noCert.Certificates = nil
	if _, err := clientWith(t, ClientConfig{Key: keyOf(1), TLS: noCert}).Pull(ctx, srv.Addr(), id, bufAlloc(&got)); err == nil {
		t.Fatal("a pull without a client certificate from an mTLS server succeeded")
	}
	testutil.Eventually(t, "the refused connections counted", func() bool { return srv.Unauthenticated() == 2 })
}
