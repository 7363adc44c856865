package gcs

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Lists are paged: with NATS's own limit (1 MiB), twenty actors of 60 KiB
// each list whole through the client (one reply would have been 1.2 MB,
// which NATS refuses: the GCS used to log it and the caller waited out its
// deadline). The raw requests show the pages: each under the budget, each
// but the last saying more, the next starting after the last id.
func TestListsAreLargerThanOneMessage(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	var want [][]byte
	for i := range 20 {
		a := namedActor("", fmt.Sprint("big", i))
		a.ActorType = strings.Repeat("x", 60<<10)
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		want = append(want, a.ActorId)
	}
	slices.SortFunc(want, bytes.Compare)
	got, err := c.ListActors(ctx)
	if err != nil {
		t.Fatalf("ListActors over %d bytes of entries: %v", 20*60<<10, err)
	}
	if !slices.EqualFunc(got, want, func(a *atollpb.ActorInfo, id []byte) bool { return bytes.Equal(a.ActorId, id) }) {
		t.Fatalf("listed %d actors, want the %d registered in id order", len(got), len(want))
	}

	var pages, seen int
	p := &atollpb.ListPage{}
	for {
		r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListActors{ListActors: &atollpb.ListActors{Page: p}}})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if n := proto.Size(r); int64(n) > e.nc.MaxPayload() {
			t.Fatalf("page %d: %d bytes, past NATS's %d", pages, n, e.nc.MaxPayload())
		}
		for i, a := range r.Actors {
			if !bytes.Equal(a.ActorId, want[seen+i]) {
				t.Fatalf("page %d entry %d out of order", pages, i)
			}
		}
		seen += len(r.Actors)
		if !r.More {
			break
		}
		p = &atollpb.ListPage{AfterId: r.Actors[len(r.Actors)-1].ActorId}
	}
	if pages < 2 || seen != len(want) {
		t.Fatalf("%d pages holding %d actors; want at least 2 pages holding %d", pages, seen, len(want))
	}
}

// With a small page budget every list pages, a page's limit is kept, the
// filter for actors left on dead nodes pages too, and a malformed
// after_id is INVALID_ARGUMENT.
func TestListPages(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	e.stopGCS()
	e.startGCS(Config{pageBytes: 1024})
	c := e.client
	host := node("host")
	if err := c.RegisterNode(ctx, host); err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if err := c.RegisterNode(ctx, node("n")); err != nil {
			t.Fatal(err)
		}
		if err := c.AddJob(ctx, &atollpb.JobInfo{JobId: ids.NewJobID().Bytes(), Entrypoint: strings.Repeat("e", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	var onHost int
	for i := range 60 {
		a := namedActor("", "")
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			alive := proto.CloneOf(a)
			alive.State, alive.NodeId = atollpb.ActorState_ACTOR_ALIVE, host.NodeId
			if err := c.UpdateActor(ctx, alive); err != nil {
				t.Fatal(err)
			}
			onHost++
		}
	}
	nodes, err := c.ListNodes(ctx)
	if err != nil || len(nodes) != 31 {
		t.Fatalf("ListNodes: %d, %v; want 31", len(nodes), err)
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil || len(jobs) != 30 {
		t.Fatalf("ListJobs: %d, %v; want 30", len(jobs), err)
	}
	actors, err := c.ListActors(ctx)
	if err != nil || len(actors) != 60 || !slices.IsSortedFunc(actors, func(a, b *atollpb.ActorInfo) int { return bytes.Compare(a.ActorId, b.ActorId) }) {
		t.Fatalf("ListActors: %d, %v; want 60 in id order", len(actors), err)
	}
	r, err := c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListActors{ListActors: &atollpb.ListActors{Page: &atollpb.ListPage{}}}})
	if err != nil || !r.More || len(r.Actors) >= 60 {
		t.Fatalf("one page under a 1 KiB budget: %d actors, more %v, %v", len(r.GetActors()), r.GetMore(), err)
	}
	r, err = c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListNodes{ListNodes: &atollpb.ListNodes{Page: &atollpb.ListPage{Limit: 2}}}})
	if err != nil || !r.More || len(r.Nodes) != 2 {
		t.Fatalf("a page of at most 2 nodes: %d, more %v, %v", len(r.GetNodes()), r.GetMore(), err)
	}

	if err := c.MarkNodeDead(ctx, host.NodeId, false, "test"); err != nil {
		t.Fatal(err)
	}
	if left, err := c.ListActorsLeftOnDeadNodes(ctx); err != nil || len(left) != 0 {
		t.Fatalf("left on dead nodes after a death that updated them all: %d, %v", len(left), err)
	}

	_, err = c.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListJobs{ListJobs: &atollpb.ListJobs{Page: &atollpb.ListPage{AfterId: []byte{1, 2, 3}}}}})
	if !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a page after a 3-byte id: %v, want INVALID_ARGUMENT", err)
	}
}

// A reply NATS cannot carry reaches the caller as RESOURCE_EXHAUSTED.
func TestReplyTooLargeIsAnError(t *testing.T) {
	e := newEnv(t)
	inbox := nats.NewInbox()
	sub, err := e.nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	huge := &atollpb.GcsReply{Actors: []*atollpb.ActorInfo{{ActorType: strings.Repeat("x", int(e.nc.MaxPayload()))}}}
	respond(e.nc, slog.New(slog.DiscardHandler), "gcs", inbox, huge)
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	var r atollpb.GcsReply
	if err := proto.Unmarshal(m.Data, &r); err != nil {
		t.Fatal(err)
	}
	if err := errs.FromProto(r.Error); !errors.Is(err, errs.ErrResourceExhausted) || !strings.Contains(err.Error(), "exceeds the largest message NATS carries") {
		t.Fatalf("reply: %v, want RESOURCE_EXHAUSTED saying why", err)
	}
}
