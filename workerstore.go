package atoll

import (
	"context"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
	"github.com/atoll-runtime/atoll/objectstore"
)

// frameStore is the object store as a worker process sees it: requests go
// to its raylet (which forwards them to the store with this worker as the
// client), bytes are views of the worker's own mapping of the arena.
type frameStore struct {
	conn  *workerconn.Conn
	arena *objectstore.Arena
}

var _ storeAPI = (*frameStore)(nil)

func timeoutMS(ctx context.Context) int64 {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d).Milliseconds()*19/20, 1)
	}
	return 0
}

func (s *frameStore) CreateOwned(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID) ([]byte, error) {
	r, err := rayletCall(ctx, s.conn, &atollpb.Frame{Body: &atollpb.Frame_CreateObject{CreateObject: &atollpb.CreateObjectRequest{
		ObjectId: id.Bytes(), Size: size, Codec: codec, TimeoutMs: timeoutMS(ctx), OwnerId: owner.Bytes()}}})
	if err != nil {
		return nil, err
	}
	reply := r.GetCreateObjectReply()
	if reply.GetError() != nil {
		return nil, objectstore.ErrorFromProto(reply.Error)
	}
	loc := reply.GetLocation()
	return s.arena.Bytes(loc.Offset, loc.Length), nil
}

func (s *frameStore) Seal(ctx context.Context, id ids.ObjectID) error {
	r, err := rayletCall(ctx, s.conn, &atollpb.Frame{Body: &atollpb.Frame_SealObject{SealObject: &atollpb.SealObjectRequest{ObjectId: id.Bytes()}}})
	if err != nil {
		return err
	}
	return objectstore.ErrorFromProto(r.GetSealObjectReply().GetError())
}

func (s *frameStore) Abort(ctx context.Context, id ids.ObjectID) error {
	r, err := rayletCall(ctx, s.conn, &atollpb.Frame{Body: &atollpb.Frame_AbortObject{AbortObject: &atollpb.AbortObjectRequest{ObjectId: id.Bytes()}}})
	if err != nil {
		return err
	}
	return objectstore.ErrorFromProto(r.GetSealObjectReply().GetError())
}

func (s *frameStore) PutOwned(ctx context.Context, id ids.ObjectID, codec atollpb.Codec, data []byte, owner ids.WorkerID) error {
	buf, err := s.CreateOwned(ctx, id, uint64(len(data)), codec, owner)
	if err != nil {
		return err
	}
	copy(buf, data)
	return s.Seal(ctx, id)
}

func (s *frameStore) Get(ctx context.Context, idList []ids.ObjectID, timeout time.Duration) ([]objectstore.Object, error) {
	return s.GetWithPriority(ctx, idList, timeout, objectstore.PriorityTaskArgument)
}

func (s *frameStore) GetWithPriority(ctx context.Context, idList []ids.ObjectID, timeout time.Duration, priority int32) ([]objectstore.Object, error) {
	req := &atollpb.GetObjectsRequest{ObjectIds: make([][]byte, len(idList)), TimeoutMs: max(timeout.Milliseconds(), 0), Priority: priority}
	for i, id := range idList {
		req.ObjectIds[i] = id.Bytes()
	}
	r, err := rayletCall(ctx, s.conn, &atollpb.Frame{Body: &atollpb.Frame_GetObjects{GetObjects: req}})
	if err != nil {
		return nil, err
	}
	reply := r.GetGetObjectsReply()
	var pinned []ids.ObjectID
	out := make([]objectstore.Object, len(idList))
	missing := -1
	for i, loc := range reply.GetLocations() {
		if len(loc.GetObjectId()) == 0 {
			missing = i
			continue
		}
		pinned = append(pinned, idList[i])
		out[i] = objectstore.Object{ID: idList[i], Codec: loc.Codec, Data: s.arena.Bytes(loc.Offset, loc.Length)}
	}
	if reply.GetError() != nil || missing >= 0 || len(reply.GetLocations()) != len(idList) {
		s.Release(pinned...)
		if reply.GetError() != nil {
			return nil, objectstore.ErrorFromProto(reply.Error)
		}
		if missing < 0 {
			missing = 0
		}
		return nil, &errs.GetTimeoutError{ObjectID: idList[missing].String()}
	}
	return out, nil
}

func (s *frameStore) Release(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		_ = s.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_ReleaseObjects{ReleaseObjects: &atollpb.ReleaseObjectsRequest{ObjectIds: idsBytes(idList)}}})
	}
}

func (s *frameStore) Delete(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		_ = s.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_DeleteObjects{DeleteObjects: &atollpb.DeleteObjectsRequest{ObjectIds: idsBytes(idList)}}})
	}
}

func (s *frameStore) Stats(ctx context.Context) (*atollpb.StoreStats, error) {
	r, err := rayletCall(ctx, s.conn, &atollpb.Frame{Body: &atollpb.Frame_StoreStats{StoreStats: &atollpb.StoreStatsRequest{}}})
	if err != nil {
		return nil, err
	}
	return r.GetStoreStatsReply(), nil
}

func idsBytes(idList []ids.ObjectID) [][]byte {
	out := make([][]byte, len(idList))
	for i, id := range idList {
		out[i] = id.Bytes()
	}
	return out
}

// frameGCS asks the GCS through the raylet.
type frameGCS struct{ conn *workerconn.Conn }

func (g *frameGCS) do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	r, err := rayletCall(ctx, g.conn, &atollpb.Frame{Body: &atollpb.Frame_GcsRequest{GcsRequest: req}})
	if err != nil {
		return nil, err
	}
	reply := r.GetGcsReply()
	if reply.GetError() != nil {
		return nil, errs.FromProto(reply.Error)
	}
	return reply, nil
}

func (g *frameGCS) RegisterActor(ctx context.Context, info *atollpb.ActorInfo) error {
	_, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterActor{RegisterActor: info}})
	return err
}

func (g *frameGCS) GetNamedActor(ctx context.Context, namespace, name string) (*atollpb.ActorInfo, error) {
	r, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetNamedActor{GetNamedActor: &atollpb.GetNamedActor{Name: name, Namespace: namespace}}})
	if err != nil {
		return nil, err
	}
	if len(r.Actors) == 0 {
		return nil, errs.NotFoundf("no actor named %q in namespace %q", name, namespace)
	}
	return r.Actors[0], nil
}
