package cluster

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// validate checks the ids of a message read from NATS that the gateway,
// the raylet or the store would otherwise trust (their Must* conversions
// panic on malformed ids). Lists whose bad elements can simply be skipped
// (the attempts of a HeldWork, the nodes of an ObjectCopies) are not
// checked here.
func validate(m proto.Message) error {
	switch m := m.(type) {
	case *atollpb.ForwardTask:
		return errors.Join(validSpec(m.Spec), validID("origin_node", m.OriginNode))
	case *atollpb.ForwardActorCall:
		if m.Address == "" {
			return errors.New("actor call without an address")
		}
		return errors.Join(validSpec(m.Spec), validID("origin_node", m.OriginNode))
	case *atollpb.ForwardedResult:
		if m.Result == nil {
			return errors.New("forwarded result without a result")
		}
		if m.Result.GeneratorItem != nil && (m.Hops < 1 || m.Hops > maxAckHops) {
			return fmt.Errorf("generator item on link %d, outside [1, %d]", m.Hops, maxAckHops)
		}
		return validID("task_id", m.Result.TaskId)
	case *atollpb.HeldWork:
		return validID("from_node", m.FromNode)
	case *atollpb.ForwardCancel:
		return validID("task_id", m.TaskId)
	case *atollpb.ForwardGeneratorAck:
		if m.Ack == nil {
			return errors.New("generator ack without an ack")
		}
		if m.Hops < 1 || m.Hops > maxAckHops {
			return fmt.Errorf("generator ack on link %d, outside [1, %d]", m.Hops, maxAckHops)
		}
		return validID("task_id", m.Ack.TaskId)
	case *atollpb.ObjectCopies:
		return validObjectID(m.ObjectId)
	case *atollpb.NodeLoad:
		return validID("node_id", m.NodeId)
	case *atollpb.OwnersExited:
		return validID("node_id", m.NodeId)
	case *atollpb.FreeObjects:
		for _, id := range m.ObjectIds {
			if err := validObjectID(id); err != nil {
				return err
			}
		}
		if m.Seq != 0 {
			if err := validID("origin_node", m.OriginNode); err != nil {
				return err
			}
		}
		for _, w := range m.ExitedOwners {
			if err := validID("exited_owners", w); err != nil {
				return err
			}
		}
	case *atollpb.FreeRepair:
		return validID("from_node", m.FromNode)
	case *atollpb.KillActor:
		return validID("actor_id", m.ActorId)
	}
	return nil
}

// validSpec checks the ids of a task spec that the raylet converts.
func validSpec(s *atollpb.TaskSpec) error {
	if s == nil {
		return errors.New("no task spec")
	}
	if err := validID("task_id", s.TaskId); err != nil {
		return err
	}
	if s.Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		if err := validID("actor_id", s.ActorId); err != nil {
			return err
		}
	}
	for _, a := range s.Args {
		if ref := a.GetRef(); ref != nil {
			if err := validObjectID(ref.ObjectId); err != nil {
				return err
			}
			if len(ref.NodeId) > 0 {
				if err := validID("node_id", ref.NodeId); err != nil {
					return err
				}
			}
		}
	}
	for _, b := range s.Borrowed {
		if err := validObjectID(b.ObjectId); err != nil {
			return err
		}
	}
	return nil
}

func validID(field string, b []byte) error {
	if _, err := ids.FromBytes(b); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}

func validObjectID(b []byte) error {
	if _, err := ids.ObjectIDFromBytes(b); err != nil {
		return fmt.Errorf("object_id: %w", err)
	}
	return nil
}
