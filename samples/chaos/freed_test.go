package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// The no-read-after-free checker on a real node: it passes while the
// store has read nothing freed, and fails once a client reads an object
// after its owner freed it (the broken scenario: Put, Delete, Get).
func TestNoReadAfterFreeCheckerFindsARead(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no address file of a real cluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, nodeconfig.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	c := n.StoreClient(ids.NewWorkerID())
	defer c.Disconnect()
	id := ids.PutObjectID(ids.NewTaskID(), 1)
	if err := c.Put(ctx, id, atollpb.Codec_CODEC_BYTES, []byte("freed soon")); err != nil {
		t.Fatal(err)
	}
	objs, err := c.Get(ctx, []ids.ObjectID{id}, time.Second) // a read before the free
	if err != nil || len(objs) != 1 {
		t.Fatalf("get before the free: %v", err)
	}
	c.Release(id)
	check := func() storeReport {
		t.Helper()
		rep, err := storesOnce(ctx, n.Address(), n.Secret(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := check(); rep.NoReadAfterFree != nil || rep.Nodes != 1 {
		t.Fatalf("before any read after free: %v, %d nodes", rep.NoReadAfterFree, rep.Nodes)
	}
	c.Delete(id)                                               // the owner frees it
	_, _ = c.Get(ctx, []ids.ObjectID{id}, 10*time.Millisecond) // and it is read again: missing
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rep := check()
		if rep.NoReadAfterFree != nil {
			if rep.ReadsAfterFree != 1 || !strings.Contains(rep.NoReadAfterFree.Error(), "freed") {
				t.Fatalf("%d reads after free: %v", rep.ReadsAfterFree, rep.NoReadAfterFree)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the checker did not see the read after free within 30 s")
		}
		<-tick.C // nodes report every 100 ms
	}
}
