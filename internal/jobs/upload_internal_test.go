package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/natsembed"
)

// serveUploads answers s's node's upload subject on a real NATS server,
// one chunk at a time in arrival order, as the service's actor does; it
// returns the client connection and the number of chunks the service took.
func serveUploads(t *testing.T, s *jobService) (*nats.Conn, func() int) {
	t.Helper()
	ns, err := natsembed.Start(natsembed.Config{Port: natsembed.NoListener, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	server, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	var mu sync.Mutex
	taken := 0
	sub, err := server.Subscribe(jobSubject(s.cfg.NodeID, jobUploadKind), func(m *nats.Msg) {
		var req atollpb.JobUpload
		if err := proto.Unmarshal(m.Data, &req); err != nil {
			t.Errorf("a bad chunk: %v", err)
			return
		}
		mu.Lock()
		r := s.receive(&req, time.Now())
		if len(req.Data) > 0 && r.Error == nil {
			taken++
		}
		mu.Unlock()
		b, _ := proto.Marshal(r)
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	client, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client, func() int { mu.Lock(); defer mu.Unlock(); return taken }
}

// TestUploadWindow: a file of many chunks, sent with several in flight,
// arrives whole and in order; a second send finds it there and sends
// nothing; a refusal (the announced hash is wrong) comes back as the
// node's typed error with the chunks still in flight dropped; a node
// that is not there is ErrUnavailable, not a hang.
func TestUploadWindow(t *testing.T) {
	s := testJobService(t)
	nc, taken := serveUploads(t, s)
	ctx := context.Background()
	data := make([]byte, 5*uploadWindow*ChunkBytes/2+123) // 20 full chunks and a part
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	sent, err := uploadFile(ctx, nc, s.cfg.NodeID, atollpb.JobFileKind_JOB_FILE_BINARY, "prog", data)
	if err != nil || !sent {
		t.Fatalf("upload: sent %v, %v", sent, err)
	}
	sum := sha256.Sum256(data)
	if got, err := os.ReadFile(jobBinaryPath(sum[:], "prog")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the installed file: %d bytes, %v; want the %d sent", len(got), err, len(data))
	}
	chunks := (len(data) + ChunkBytes - 1) / ChunkBytes
	if n := taken(); n != chunks {
		t.Errorf("the node took %d chunks, want %d", n, chunks)
	}
	if sent, err := uploadFile(ctx, nc, s.cfg.NodeID, atollpb.JobFileKind_JOB_FILE_BINARY, "prog", data); err != nil || sent {
		t.Errorf("a second upload of the same file: sent %v, %v; want nothing sent", sent, err)
	}

	// A hash that is not the data's: the node refuses the last chunk.
	bad := append([]byte(nil), data...)
	bad[0]++
	hdr := &atollpb.JobUpload{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: uint64(len(bad)), Name: "other"}
	if _, err := sendChunks(ctx, nc, s.cfg.NodeID, hdr, bad); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("chunks of a file whose hash is not the one announced: %v, want ErrInvalidArgument", err)
	}
	if len(s.uploads) != 0 {
		t.Errorf("the node keeps %d uploads after a refused one", len(s.uploads))
	}
	// The node refuses the first chunk (its upload table is full): that
	// error comes back, not the replies to the chunks behind it.
	for i := range maxUploads {
		c := proto.CloneOf(hdr)
		c.Sha256, c.Data = bytes.Repeat([]byte{byte(i)}, sha256.Size), data[:1]
		if r := s.receive(c, time.Now()); r.Error != nil {
			t.Fatalf("upload %d: %v", i, errs.FromProto(r.Error))
		}
	}
	if _, err := sendChunks(ctx, nc, s.cfg.NodeID, hdr, data); !errors.Is(err, errs.ErrResourceExhausted) {
		t.Errorf("chunks to a node receiving %d files: %v, want ErrResourceExhausted", maxUploads, err)
	}

	// Nobody serves this node's subject.
	gone := testJobService(t).cfg.NodeID
	if _, err := sendChunks(ctx, nc, gone, hdr, data); !errors.Is(err, errs.ErrUnavailable) {
		t.Errorf("chunks to a node that is not there: %v, want ErrUnavailable", err)
	}
}
