package runtime

import (
	"context"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Placement groups and resource requests: requests to the head's
// placement manager and autoscaler through the runtime's GCS client (a
// driver's NATS connection, or a worker's raylet).

// waitChunk bounds one wait request: a longer wait asks again.
const waitChunk = 10 * time.Second

// CreatePlacementGroup creates a placement group: its id, creator node,
// job and namespace are this runtime's.
func (rt *Runtime) CreatePlacementGroup(ctx context.Context, name string, strategy atollpb.PlacementStrategy, bundles []map[string]float64,
	detached bool) (*atollpb.PlacementGroupInfo, error) {
	info := &atollpb.PlacementGroupInfo{PlacementGroupId: rt.newPlacementGroupID().Bytes(), Name: name, Namespace: rt.settings.Namespace,
		Strategy: strategy, CreatorNodeId: rt.nodeID.Bytes(), JobId: rt.jobID.Bytes(), Detached: detached}
	for _, b := range bundles {
		info.Bundles = append(info.Bundles, &atollpb.Bundle{Resources: b})
	}
	r, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_CreatePlacementGroup{CreatePlacementGroup: info}})
	return oneGroup(r, err)
}

// RemovePlacementGroup removes a group (a removed one again: no-op).
func (rt *Runtime) RemovePlacementGroup(ctx context.Context, id ids.PlacementGroupID) error {
	_, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RemovePlacementGroup{RemovePlacementGroup: id.Bytes()}})
	return err
}

// PlacementGroup returns a group's entry by id.
func (rt *Runtime) PlacementGroup(ctx context.Context, id ids.PlacementGroupID) (*atollpb.PlacementGroupInfo, error) {
	r, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetPlacementGroup{GetPlacementGroup: &atollpb.GetPlacementGroup{PlacementGroupId: id.Bytes()}}})
	return oneGroup(r, err)
}

// NamedPlacementGroup returns the live group named name in the
// runtime's namespace.
func (rt *Runtime) NamedPlacementGroup(ctx context.Context, name string) (*atollpb.PlacementGroupInfo, error) {
	r, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetPlacementGroup{GetPlacementGroup: &atollpb.GetPlacementGroup{
		Name: name, Namespace: rt.settings.Namespace}}})
	return oneGroup(r, err)
}

// PlacementGroups lists every group the head knows.
func (rt *Runtime) PlacementGroups(ctx context.Context) ([]*atollpb.PlacementGroupInfo, error) {
	r, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListPlacementGroups{ListPlacementGroups: &atollpb.ListPlacementGroups{}}})
	return r.GetPlacementGroups(), err
}

// WaitPlacementGroup waits until a group is created or removed, or ctx
// ends, and returns its entry then.
func (rt *Runtime) WaitPlacementGroup(ctx context.Context, id ids.PlacementGroupID) (*atollpb.PlacementGroupInfo, error) {
	for {
		chunk := waitChunk
		if d, ok := ctx.Deadline(); ok {
			chunk = min(chunk, time.Until(d))
		}
		if chunk <= 0 {
			return rt.PlacementGroup(context.WithoutCancel(ctx), id)
		}
		rctx, cancel := context.WithTimeout(ctx, chunk+5*time.Second)
		r, err := rt.gcs.Do(rctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_WaitPlacementGroup{WaitPlacementGroup: &atollpb.WaitPlacementGroup{
			PlacementGroupId: id.Bytes(), TimeoutMs: max(chunk.Milliseconds(), 1)}}})
		cancel()
		info, err := oneGroup(r, err)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		switch info.State {
		case atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED, atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED:
			return info, nil
		}
		if ctx.Err() != nil {
			return info, nil
		}
	}
}

// RequestResources asks the autoscaler for room for bundles at once, for
// this runtime's job (replacing its earlier request; none withdraws it).
func (rt *Runtime) RequestResources(ctx context.Context, bundles []map[string]float64) error {
	req := &atollpb.RequestResources{Requester: rt.jobID.Bytes()}
	for _, b := range bundles {
		req.Bundles = append(req.Bundles, &atollpb.Bundle{Resources: b})
	}
	_, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RequestResources{RequestResources: req}})
	return err
}

func oneGroup(r *atollpb.GcsReply, err error) (*atollpb.PlacementGroupInfo, error) {
	if err != nil {
		return nil, err
	}
	if len(r.GetPlacementGroups()) != 1 {
		return nil, errs.Unavailablef("placement group: the reply holds %d groups, want 1", len(r.GetPlacementGroups()))
	}
	return r.PlacementGroups[0], nil
}
