package remote

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// pipeDialer hands the client one end of a pipe whose other end plays a
// server that drops whatever comes, writes reply and hangs up.
type pipeDialer struct{ reply []byte }

func (d pipeDialer) DialContext(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	go func() {
		_ = server.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = server.Write(d.reply)
		_ = server.Close()
	}()
	return client, nil
}

// FuzzPullReply feeds a client (with and without the handshake) any bytes
// a server could send: it must fail or succeed with a typed error, never
// panic, hang or allocate what the peer asks beyond the caller's limit.
func FuzzPullReply(f *testing.F) {
	hdr := encodeReply(statusOK, 3)
	f.Add(append(hdr[:], "abc"...), false)
	nf := encodeReply(statusNotFound, 2)
	f.Add(append(nf[:], "no"...), false)
	f.Add([]byte("ATLT\x01"+string(make([]byte, 32+32))), true)
	big := encodeReply(statusOK, 1<<62)
	f.Add(big[:], false)
	msg := encodeReply(statusError, 1<<40)
	f.Add(msg[:], false)
	f.Fuzz(func(t *testing.T, reply []byte, keyed bool) {
		cfg := ClientConfig{Dialer: pipeDialer{reply: reply}, HandshakeTimeout: time.Second}
		if keyed {
			cfg.Key = make([]byte, 32)
		}
		c, err := NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		const limit = 1 << 20
		n, err := c.Pull(ctx, "peer:1", objID(1), func(size uint64) ([]byte, error) {
			if size > limit {
				return nil, errs.Invalidf("size %d past the limit", size)
			}
			return make([]byte, size), nil
		})
		if err == nil && n > limit {
			t.Fatalf("pulled %d bytes past the limit", n)
		}
		if err != nil && !errors.Is(err, errs.ErrUnavailable) && !errors.Is(err, errs.ErrNotFound) &&
			!errors.Is(err, errs.ErrInvalidArgument) && !errors.Is(err, errs.ErrUnauthenticated) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
