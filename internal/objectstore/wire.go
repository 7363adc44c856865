package objectstore

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Conversions between the store's Go types and the store.proto messages.

func respond(ctx actor.Context, to *actor.PID, msg any) {
	if to != nil {
		ctx.Send(to, msg)
	}
}

func getReply(locs []Location, err error) *atollpb.GetObjectsReply {
	r := &atollpb.GetObjectsReply{Locations: make([]*atollpb.ObjectLocation, len(locs)), Error: errs.ToProto(err)}
	for i, loc := range locs {
		if loc.ID.IsZero() {
			r.Locations[i] = &atollpb.ObjectLocation{}
			continue
		}
		r.Locations[i] = locationProto(loc)
	}
	return r
}

func locationProto(loc Location) *atollpb.ObjectLocation {
	return &atollpb.ObjectLocation{ObjectId: loc.ID.Bytes(), Offset: loc.Offset, Length: loc.Length, Codec: loc.Codec}
}

func parseIDs(object, client []byte) (ids.ObjectID, ids.WorkerID, error) {
	id, err := ids.ObjectIDFromBytes(object)
	if err != nil {
		return id, ids.WorkerID{}, errs.Invalidf("%v", err)
	}
	if id.IsZero() {
		return id, ids.WorkerID{}, errs.Invalidf("zero object id")
	}
	c, err := ids.FromBytes(client)
	if err != nil {
		return id, c, errs.Invalidf("client id: %v", err)
	}
	return id, c, nil
}

func objectIDs(raw [][]byte) ([]ids.ObjectID, error) {
	out := make([]ids.ObjectID, len(raw))
	for i, b := range raw {
		id, err := ids.ObjectIDFromBytes(b)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}
