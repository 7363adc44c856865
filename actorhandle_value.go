package atoll

import (
	"bytes"
	"reflect"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// An ActorHandle is a value like any other: pass it to a task or an actor
// method as an argument (Value(h)), inside a struct, a slice or a map, or
// return it. It travels as an atollpb.ActorHandleValue (the actor's id,
// name, type and MaxTaskRetries); the receiving process makes a handle of
// its own from it, which calls the actor like any handle made there:
// calls through it from that process start in the order they were made.
//
// What keeps an actor alive is not its handles: an actor lives until Kill,
// until its restarts run out, or until the job that created it ends. A
// passed handle is therefore usable for as long as the job runs, and no
// handle, passed or not, keeps an actor alive after its job.

// maxActorHandleValue bounds an encoded handle, and the names in it.
const (
	maxActorHandleValue = 4 << 10
	maxActorNameLen     = 1 << 10
)

// GobEncode lets an ActorHandle travel inside values (see ActorHandle).
func (h ActorHandle[T]) GobEncode() ([]byte, error) {
	if h.st == nil {
		return nil, errs.Invalidf("cannot pass a zero ActorHandle: make it with ActorType.New or GetActor first")
	}
	b, err := proto.Marshal(&atollpb.ActorHandleValue{ActorId: h.st.ID.Bytes(), Name: h.st.Name, ActorType: h.st.TypeName,
		MaxTaskRetries: int32(h.st.MaxTaskRetries)})
	if err != nil {
		return nil, err
	}
	// The marker lets the process decoding the value find the handle in
	// its bytes (runtime.DecodeIn).
	return append(append([]byte(nil), runtime.ActorHandleMarker...), b...), nil
}

// GobDecode makes a handle in this process to the actor b names: the
// actor must be of a type registered in this binary as T. Calls through
// it wait, like calls to an actor being created, until this process knows
// where the actor lives (it asks the GCS at once, and hears of the actor's
// moves as every handle does).
func (h *ActorHandle[T]) GobDecode(b []byte) error {
	if len(b) > maxActorHandleValue {
		return errs.Invalidf("ActorHandle encoding of %d bytes (at most %d): not a handle atoll encoded", len(b), maxActorHandleValue)
	}
	b, marked := bytes.CutPrefix(b, runtime.ActorHandleMarker)
	if !marked {
		return errs.Invalidf("malformed ActorHandle encoding: not a handle atoll encoded")
	}
	var v atollpb.ActorHandleValue
	if err := proto.Unmarshal(b, &v); err != nil {
		return errs.Invalidf("malformed ActorHandle encoding: %v", err)
	}
	id, err := ids.FromBytes(v.ActorId)
	if err != nil || id.IsZero() {
		return errs.Invalidf("ActorHandle encoding without a valid actor id (%d bytes)", len(v.ActorId))
	}
	if len(v.Name) > maxActorNameLen || len(v.ActorType) > maxActorNameLen {
		return errs.Invalidf("ActorHandle encoding with a name of %d bytes or a type of %d (at most %d)", len(v.Name), len(v.ActorType), maxActorNameLen)
	}
	if v.MaxTaskRetries < -1 {
		return errs.Invalidf("ActorHandle encoding with MaxTaskRetries %d", v.MaxTaskRetries)
	}
	e, ok := registry.ActorTypes.Lookup(v.ActorType)
	if !ok {
		return errs.Invalidf("a handle to actor %s of type %q, which this binary does not register: register actor types at package init (NewActorType) so every process knows them", id.Short(), v.ActorType)
	}
	if want := reflect.TypeFor[T](); e.GoType != want {
		return errs.Invalidf("a handle to actor %s of type %s (%v) decoded as ActorHandle[%v]: declare the field or argument with the actor's type", id.Short(), v.ActorType, e.GoType, want)
	}
	rt, err := runtime.DecodingRuntime()
	if err != nil {
		return errs.Unavailablef("an ActorHandle can only be decoded while atoll runs in this process (%v)", err)
	}
	h.st = rt.NewActor(id, v.Name, v.ActorType, int(v.MaxTaskRetries), 0, false)
	rt.LocateActor(id)
	return nil
}
