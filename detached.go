package atoll

import (
	"context"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Detached makes an actor outlive the process that created it (Ray's
// lifetime="detached"): it is not killed when its creator shuts down or
// exits, nor when the creator's node leaves the cluster. Any driver or
// task finds it by name with GetActor, and only Kill (or the death of the
// node hosting it, or MaxRestarts running out) ends it. An actor option
// for ActorType.New; the actor must be named (ActorName), else New fails
// with ErrInvalidArgument.
//
// Detached matters for a driver connected to a cluster (WithAddress): the
// actor lives on the cluster's nodes, which outlive the driver. A driver
// running the embedded single-node cluster (Init with no address) hosts
// its actors in its own node, so a detached actor there still ends with
// the process: it is only kept alive across the creator's handles being
// dropped, as in a cluster. The constructor's arguments are read once, at
// creation; a detached actor restarted (MaxRestarts) after its creator is
// gone needs arguments that are values (atoll.Value), not refs the
// creator owned.
func Detached() ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.detached = true }}
}

// GetIfExists makes ActorType.New return the live actor of the same name
// if there is one, instead of failing because the name is taken (Ray's
// get_if_exists=True): get-or-create. The GCS's name registration
// decides, so of two callers creating the same name at once one creates
// the actor and the other gets a handle to it; the constructor runs
// once. The existing actor keeps its own options and constructor
// arguments (those given to this New are unused then). An actor option;
// the actor must be named (ActorName), else New fails with
// ErrInvalidArgument, and an existing actor of another type fails as
// GetActor does.
func GetIfExists() ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.getIfExists = true }}
}

// checkLifetime checks the options of detached.go for an actor creation.
func checkLifetime(cc callConfig) error {
	if cc.detached && cc.actorName == "" {
		return errs.Invalidf("Detached actor without a name: a detached actor outlives its creator and is found again only by name; add atoll.ActorName(...)")
	}
	if cc.getIfExists && cc.actorName == "" {
		return errs.Invalidf("GetIfExists without a name: only a named actor can exist already; add atoll.ActorName(...)")
	}
	return nil
}

// getIfExistsAttempts bounds the create-or-get rounds of GetIfExists: a
// round fails only when the name's holder died between the GCS refusing
// the name and the lookup, which needs another actor of that name to be
// created and to die meanwhile.
const getIfExistsAttempts = 5

// registerActor registers info with the GCS. With getIfExists, a
// refused registration (the name is taken) returns the live actor that
// holds the name instead (found true): the GCS, which decides who holds a
// name, makes get-or-create race-free.
func registerActor[T any](ctx context.Context, rt *core, info *atollpb.ActorInfo, getIfExists bool) (existing ActorHandle[T], found bool, err error) {
	for attempt := 1; ; attempt++ {
		err := rt.gcs.RegisterActor(ctx, info)
		if err == nil || !getIfExists || !errors.Is(err, errs.ErrInvalidArgument) {
			return ActorHandle[T]{}, false, err
		}
		h, err2 := GetActor[T](ctx, info.Name)
		switch {
		case err2 == nil:
			return h, true, nil
		case !errors.Is(err2, errs.ErrNotFound):
			return ActorHandle[T]{}, false, err2
		case attempt == getIfExistsAttempts:
			return ActorHandle[T]{}, false, fmt.Errorf("GetIfExists: actor %q: the name was taken and then free %d times in a row: %w", info.Name, attempt, err)
		}
		// Refused, yet nobody holds the name: its holder died since.
	}
}
