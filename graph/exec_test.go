package graph

import (
	"errors"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// A corrupt task spec fails its task, in a worker process, with a
// MalformedError the driver can test for.
func TestMalformedSpecFromWorker(t *testing.T) {
	ctx := testmain.Start(t)
	spec := atoll.Value(atoll.Raw{Codec: atollpb.Codec_CODEC_PROTO, Data: []byte{0x0a, 0xff, 0xff}})
	_, err := atoll.Get(ctx, execOne.Remote(ctx, []atoll.Arg[atoll.Raw]{spec}))
	var me *MalformedError
	if !errors.As(err, &me) || me.What != specWhat || !errors.Is(err, ErrMalformed) || !errors.Is(err, atoll.ErrInvalidArgument) || !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("%v, want a TaskError holding a MalformedError", err)
	}
}
