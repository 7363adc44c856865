package atoll

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// Placement groups (Ray's): reserve a gang of resource bundles across the
// cluster's nodes at once, then place tasks and actors in them.
//
//	pg, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 1}, {CPU: 1}, {CPU: 1}}, atoll.PlacementStrictSpread)
//	if err := pg.Ready(ctx); err != nil { ... }          // every bundle reserved
//	h, err := worker.New(ctx, atoll.InPlacementGroup(pg, 0)) // an actor in bundle 0
//	ref := f.Remote(ctx, atoll.Value(1), atoll.InPlacementGroup(pg, atoll.AnyBundle))
//	err = pg.Remove(ctx)                                  // what runs in it is killed
//
// The bundles are reserved by the head's placement manager with a
// two-phase commit: every chosen node prepares its bundles (all or
// none), then all commit; a refusal releases them and the group waits
// for room (an autoscaler adds nodes for it). A group whose node dies is
// placed again: the lost bundles are reserved elsewhere and the actors in
// them restart within their MaxRestarts. A group goes with the node of
// its creator (its driver's exit) unless it is detached
// (DetachedPlacementGroup); its state lives in the GCS and survives a
// restart of the head.

// PlacementStrategy is how a placement group's bundles spread over the
// cluster's nodes.
type PlacementStrategy int32

// The strategies, Ray's.
const (
	// PlacementPack puts the bundles on as few nodes as possible (best
	// effort): Ray's PACK.
	PlacementPack = PlacementStrategy(atollpb.PlacementStrategy_PACK)
	// PlacementSpread puts them on as many distinct nodes as possible
	// (best effort): SPREAD.
	PlacementSpread = PlacementStrategy(atollpb.PlacementStrategy_SPREAD)
	// PlacementStrictPack puts every bundle on one node, or reserves
	// none: STRICT_PACK.
	PlacementStrictPack = PlacementStrategy(atollpb.PlacementStrategy_STRICT_PACK)
	// PlacementStrictSpread puts every bundle on a node of its own, or
	// reserves none: STRICT_SPREAD.
	PlacementStrictSpread = PlacementStrategy(atollpb.PlacementStrategy_STRICT_SPREAD)
)

func (s PlacementStrategy) String() string {
	if n, ok := atollpb.PlacementStrategy_name[int32(s)]; ok {
		return n
	}
	return fmt.Sprintf("PlacementStrategy(%d)", int32(s))
}

// AnyBundle as InPlacementGroup's bundle index places a task or actor in
// whichever bundle of the group has room.
const AnyBundle = -1

// ErrPlacementGroupRemoved: the placement group was removed (Ready,
// State); tasks and actors placed in a removed group fail with an
// UnschedulableError. It also matches ErrNotFound.
var ErrPlacementGroupRemoved = fmt.Errorf("%w: placement group removed", ErrNotFound)

// PlacementGroup is a handle to a placement group. It is safe for
// concurrent use.
type PlacementGroup struct {
	id       ids.PlacementGroupID
	name     string
	strategy PlacementStrategy
	bundles  []map[string]float64
}

// PlacementGroupOption configures a placement group's creation.
type PlacementGroupOption func(*pgConfig)

type pgConfig struct {
	name     string
	detached bool
}

// PlacementGroupName names the group: unique among the live groups of the
// namespace, found again with GetPlacementGroup.
func PlacementGroupName(name string) PlacementGroupOption {
	return func(c *pgConfig) { c.name = name }
}

// DetachedPlacementGroup makes the group outlive its creator: only a
// removal ends it (Ray's lifetime="detached").
func DetachedPlacementGroup() PlacementGroupOption {
	return func(c *pgConfig) { c.detached = true }
}

// NewPlacementGroup asks the cluster to reserve bundles by strategy and
// returns once the head has recorded the group: the bundles are being
// reserved (Ready waits for them). Bad bundles (none, one without a
// positive amount, a negative one), an unknown strategy or a name in use
// fail with ErrInvalidArgument.
func NewPlacementGroup(ctx context.Context, bundles []Resources, strategy PlacementStrategy, opts ...PlacementGroupOption) (*PlacementGroup, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return nil, err
	}
	var cfg pgConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if _, ok := atollpb.PlacementStrategy_name[int32(strategy)]; !ok {
		return nil, errs.Invalidf("NewPlacementGroup: unknown strategy %d", int32(strategy))
	}
	if len(bundles) == 0 {
		return nil, errs.Invalidf("NewPlacementGroup: no bundles")
	}
	pg := &PlacementGroup{name: cfg.name, strategy: strategy}
	for i, b := range bundles {
		m := b.toMap()
		some := false
		for k, v := range m {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, errs.Invalidf("NewPlacementGroup: bundle %d: %s=%g (want a positive amount)", i, k, v)
			}
			some = some || v > 0
		}
		if !some {
			return nil, errs.Invalidf("NewPlacementGroup: bundle %d holds no resources (give it e.g. Resources{CPU: 1})", i)
		}
		pg.bundles = append(pg.bundles, m)
	}
	info, err := rt.CreatePlacementGroup(ctx, cfg.name, atollpb.PlacementStrategy(strategy), pg.bundles, cfg.detached)
	if err != nil {
		return nil, err
	}
	pg.id = ids.MustFromBytes(info.PlacementGroupId)
	return pg, nil
}

// GetPlacementGroup returns the live placement group named name in this
// namespace, or ErrNotFound.
func GetPlacementGroup(ctx context.Context, name string) (*PlacementGroup, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return nil, err
	}
	info, err := rt.NamedPlacementGroup(ctx, name)
	if err != nil {
		return nil, err
	}
	return groupOf(info), nil
}

func groupOf(info *atollpb.PlacementGroupInfo) *PlacementGroup {
	pg := &PlacementGroup{id: ids.MustFromBytes(info.PlacementGroupId), name: info.Name, strategy: PlacementStrategy(info.Strategy)}
	for _, b := range info.Bundles {
		pg.bundles = append(pg.bundles, maps.Clone(b.GetResources()))
	}
	return pg
}

// ID is the group's id (hex).
func (pg *PlacementGroup) ID() string { return pg.id.String() }

// Name is the group's name ("" for an anonymous group).
func (pg *PlacementGroup) Name() string { return pg.name }

// Strategy is the group's strategy.
func (pg *PlacementGroup) Strategy() PlacementStrategy { return pg.strategy }

// Bundles are the group's bundles' resources, by name ("CPU", "memory",
// custom ones).
func (pg *PlacementGroup) Bundles() []map[string]float64 {
	out := make([]map[string]float64, len(pg.bundles))
	for i, b := range pg.bundles {
		out[i] = maps.Clone(b)
	}
	return out
}

// Ready waits until every bundle of the group is reserved, or ctx ends
// (its error, with the reason the group still waits: the resources it
// lacks, say). A removed group fails with ErrPlacementGroupRemoved.
func (pg *PlacementGroup) Ready(ctx context.Context) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	info, err := rt.WaitPlacementGroup(ctx, pg.id)
	if err != nil {
		return err
	}
	return readiness(info, ctx.Err())
}

// Wait is Ray's pg.wait: it waits at most timeout for the group to be
// ready and reports whether it is.
func (pg *PlacementGroup) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := pg.Ready(wctx)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return false, nil
	}
	return false, err
}

func readiness(info *atollpb.PlacementGroupInfo, ctxErr error) error {
	switch info.State {
	case atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED:
		return nil
	case atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED:
		return fmt.Errorf("%w: %x (%s)", ErrPlacementGroupRemoved, info.PlacementGroupId[:4], info.Reason)
	}
	if ctxErr == nil {
		ctxErr = context.DeadlineExceeded
	}
	why := info.Reason
	if why == "" {
		why = "its bundles are being reserved"
	}
	return fmt.Errorf("placement group %x not ready (%s): %w", info.PlacementGroupId[:4], why, ctxErr)
}

// Remove removes the group: it returns once the removal is recorded; its
// bundles are then released and the tasks and actors in them killed
// (calls to those actors fail ActorDied). Removing it again does nothing.
func (pg *PlacementGroup) Remove(ctx context.Context) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	return rt.RemovePlacementGroup(ctx, pg.id)
}

// RemovePlacementGroup removes pg (Ray's remove_placement_group).
func RemovePlacementGroup(ctx context.Context, pg *PlacementGroup) error {
	if pg == nil {
		return errs.Invalidf("RemovePlacementGroup: nil placement group")
	}
	return pg.Remove(ctx)
}

// PlacementGroupState is what the head knows of a placement group.
type PlacementGroupState struct {
	ID       string
	Name     string
	Strategy PlacementStrategy
	Bundles  []map[string]float64
	// State: PENDING, CREATED, RESCHEDULING or REMOVED.
	State string
	// BundleNodes are the nodes of the bundles (hex ids; "" for a bundle
	// not reserved yet).
	BundleNodes []string
	// Reason says why it is not created (pending, rescheduling) or why
	// it was removed; Infeasible: no node the cluster has could hold it.
	Reason     string
	Infeasible bool
	Detached   bool
	// Reschedules counts its returns to reserving after a node died.
	Reschedules int
}

func stateOf(info *atollpb.PlacementGroupInfo) PlacementGroupState {
	s := PlacementGroupState{ID: fmt.Sprintf("%x", info.PlacementGroupId), Name: info.Name, Strategy: PlacementStrategy(info.Strategy),
		Bundles: groupOf(info).bundles, State: info.State.String()[len("PLACEMENT_GROUP_"):], Reason: info.Reason,
		Infeasible: info.Infeasible, Detached: info.Detached, Reschedules: int(info.Reschedules)}
	for _, n := range info.BundleNodes {
		if len(n) == 0 {
			s.BundleNodes = append(s.BundleNodes, "")
		} else {
			s.BundleNodes = append(s.BundleNodes, fmt.Sprintf("%x", n))
		}
	}
	return s
}

// State asks the head for the group's state.
func (pg *PlacementGroup) State(ctx context.Context) (PlacementGroupState, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return PlacementGroupState{}, err
	}
	info, err := rt.PlacementGroup(ctx, pg.id)
	if err != nil {
		return PlacementGroupState{}, err
	}
	return stateOf(info), nil
}

// PlacementGroups lists every placement group the head knows, the
// removed ones it remembers included (Ray's placement_group_table).
func PlacementGroups(ctx context.Context) ([]PlacementGroupState, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := rt.PlacementGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]PlacementGroupState, len(infos))
	for i, info := range infos {
		out[i] = stateOf(info)
	}
	return out, nil
}

// InPlacementGroup places a task or an actor in bundle bundleIndex of pg
// (AnyBundle: any bundle with room). Its resources come out of the
// bundle's: it waits until the group is reserved, and fails with an
// UnschedulableError once the group is removed. An index out of range,
// or resources the bundle (every bundle, with AnyBundle) cannot hold,
// fail the call with ErrInvalidArgument.
func InPlacementGroup(pg *PlacementGroup, bundleIndex int) TaskOrActorOption {
	return TaskOrActorOption{func(c *callConfig) {
		c.pgroup, c.pbundle = pg, bundleIndex
		if pg == nil {
			c.pgroupErr = errs.Invalidf("InPlacementGroup: nil placement group")
			return
		}
		if bundleIndex < AnyBundle || bundleIndex >= len(pg.bundles) {
			c.pgroupErr = errs.Invalidf("InPlacementGroup: bundle %d of a group of %d bundles", bundleIndex, len(pg.bundles))
			return
		}
		c.pgroupErr = nil
		c.scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_PLACEMENT_GROUP,
			PlacementGroupId: pg.id.Bytes(), BundleIndex: int32(bundleIndex)}
	}}
}

// checkGroup refuses a task or actor placed in a bundle that cannot hold
// its demand.
func (c callConfig) checkGroup(demand map[string]float64) error {
	if c.pgroupErr != nil {
		return c.pgroupErr
	}
	if c.pgroup == nil || c.scheduling.GetKind() != atollpb.SchedulingStrategy_PLACEMENT_GROUP {
		return nil
	}
	fits := func(b map[string]float64) bool {
		for k, v := range demand {
			if v > 0 && b[k] < v-1e-9 {
				return false
			}
		}
		return true
	}
	if c.pbundle >= 0 {
		if !fits(c.pgroup.bundles[c.pbundle]) {
			return errs.Invalidf("InPlacementGroup: the call demands %v, bundle %d holds %v", demand, c.pbundle, c.pgroup.bundles[c.pbundle])
		}
		return nil
	}
	for _, b := range c.pgroup.bundles {
		if fits(b) {
			return nil
		}
	}
	return errs.Invalidf("InPlacementGroup: the call demands %v, no bundle of the group holds that much", demand)
}

// RequestResources asks the cluster's autoscaler to hold room for these
// bundles at once, whatever runs (Ray's request_resources): it adds nodes
// until they would fit and keeps them past their idle timeout. A later
// call replaces the request of this job; none withdraws it. Without an
// autoscaler it fails with ErrUnavailable.
func RequestResources(ctx context.Context, bundles ...Resources) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	out := make([]map[string]float64, 0, len(bundles))
	for i, b := range bundles {
		m := b.toMap()
		for k, v := range m {
			if !(v >= 0) || math.IsInf(v, 0) {
				return errs.Invalidf("RequestResources: bundle %d: %s=%g", i, k, v)
			}
		}
		out = append(out, m)
	}
	return rt.RequestResources(ctx, out)
}
