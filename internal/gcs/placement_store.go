package gcs

// The placement actor's writes to its KV bucket: each group's entry
// published asynchronously, in order, its acknowledgement posted back to
// the actor; a forgotten group's entry purged.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// write stores a group's entry with an asynchronous publish (ordered
// after the earlier ones of this actor), then runs done on the actor with
// the outcome: nil once JetStream acked it.
func (s *placementServer) write(info *atollpb.PlacementGroupInfo, done func(error)) {
	k := fmt.Sprintf("%x", info.PlacementGroupId)
	b, err := proto.Marshal(info)
	if err == nil && len(b) > DefaultMaxEntryBytes {
		err = errs.Invalidf("placement: a %d-byte entry for group %s exceeds the largest the GCS takes, %d bytes", len(b), k, DefaultMaxEntryBytes)
	}
	var fut nats.PubAckFuture
	if err == nil {
		fut, err = s.js.PublishAsync("$KV."+s.kv.Bucket()+"."+k, b)
	}
	if err != nil {
		done(errs.Unavailablef("placement: store %s: %v", k, err))
		return
	}
	select {
	case s.acks <- pendingWrite{key: k, fut: fut, done: done}:
	default:
		done(errs.Unavailablef("placement: store %s: too many writes waiting for JetStream", k))
	}
}

// pendingWrite is a write waiting for JetStream's acknowledgement.
type pendingWrite struct {
	key  string
	fut  nats.PubAckFuture
	done func(error)
}

// maxPendingWrites bounds the writes waiting for their acknowledgement.
const maxPendingWrites = 1 << 16

// ackLoop waits for the writes' acknowledgements, in the order they were
// published (JetStream acks a stream's messages in order), and posts each
// outcome to the actor, until stop closes.
func ackLoop(root *actor.RootContext, self *actor.PID, acks <-chan pendingWrite, stop <-chan struct{}, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		var w pendingWrite
		select {
		case w = <-acks:
		case <-stop:
			return
		}
		t.Reset(timeout)
		var err error
		select {
		case <-w.fut.Ok():
		case e := <-w.fut.Err():
			var api *nats.APIError
			if errors.As(e, &api) && api.ErrorCode == nats.ErrorCode(jsMaxBytesExceeded) {
				err = errs.Exhaustedf("placement: the groups' bucket is full: no room for %s (%v)", w.key, e)
			} else {
				err = errs.Unavailablef("placement: store %s: %v", w.key, e)
			}
		case <-t.C:
			err = errs.Unavailablef("placement: store %s: no acknowledgement within %v", w.key, timeout)
		case <-stop:
			return
		}
		root.Send(self, &pgWritten{done: w.done, err: err})
	}
}

// purge removes a group's entry without a delete marker (store.remove).
func (s *placementServer) purge(id ids.ID16) error {
	c, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	if err := s.stream.Purge(c, jetstream.WithPurgeSubject("$KV."+s.kv.Bucket()+"."+id.String())); err != nil {
		return errs.Unavailablef("placement: remove %s from the store: %v", id.Short(), err)
	}
	return nil
}
