package util_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/util"
)

// util keeps no table of names of its own: the Queue's actor is an actor
// type of atoll's (registry.ActorTypes) and its errors are sentinels of
// atoll's (registry.Sentinels), so a second registration of the queue's
// name panics as any actor type's does, and a worker that did not know it
// would fail the queue's creation as for any actor type.
func TestRegisteredAsAtollKinds(t *testing.T) {
	if _, ok := registry.ActorTypes.Lookup("atoll/util.Queue"); !ok {
		t.Fatal("the queue's actor type is not in registry.ActorTypes")
	}
	if _, ok := registry.Sentinels.Lookup(util.ErrQueueFull.Error()); !ok {
		t.Error("ErrQueueFull is not in registry.Sentinels")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `atoll: actor type "atoll/util.Queue" registered twice`) {
			t.Errorf("a second registration of the queue's actor type: panic %v", r)
		}
	}()
	atoll.NewActorType("atoll/util.Queue", func(context.Context) (*struct{}, error) { return &struct{}{}, nil })
}
