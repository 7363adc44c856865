package errs

import (
	"encoding/hex"
	"errors"

	"github.com/atoll-runtime/atoll/atollpb"
)

// ToProto converts an error to its wire form. Errors that are not atoll
// typed errors become TASK_ERROR with the error's text.
func ToProto(err error) *atollpb.ErrorInfo {
	if err == nil {
		return nil
	}
	var (
		te  *TaskError
		wc  *WorkerCrashedError
		ad  *ActorDiedError
		sf  *ObjectStoreFullError
		ol  *ObjectLostError
		orf *ObjectReconstructionFailedError
		gt  *GetTimeoutError
		cn  *CancelledError
		od  *OwnerDiedError
		nd  *NodeDiedError
		us  *UnschedulableError
		fl  *ForwardLostError
		re  *ResourceExhaustedError
		cd  *CodeError
		fe  *FunctionError
		me  *MalformedError
		nr  *NotRegisteredError
		msg = err.Error()
	)
	switch {
	case errors.As(err, &te):
		info := &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: clip(te.Message, MaxMessage), TaskName: te.TaskName,
			TaskId: unhex(te.TaskID), RemoteStack: clip(te.RemoteStack, MaxStack), ErrorType: te.ErrorType}
		encodeCause(te.Cause, info)
		if info.UnregisteredType == "" {
			info.UnregisteredType = te.UnregisteredType
		}
		return info
	case errors.As(err, &fe):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_FUNCTION_FAILED, Message: msg, TaskName: fe.Func}
	case errors.As(err, &wc):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_WORKER_CRASHED, Message: wc.Message, TaskName: wc.TaskName, TaskId: unhex(wc.TaskID)}
	case errors.As(err, &ad):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_ACTOR_DIED, Message: ad.Message, TaskName: ad.Name, ActorId: unhex(ad.ActorID)}
	case errors.As(err, &sf):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_OBJECT_STORE_FULL, Message: msg, ObjectId: unhex(sf.ObjectID)}
	case errors.As(err, &orf):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_OBJECT_RECONSTRUCTION_FAILED, Message: orf.Reason, ObjectId: unhex(orf.ObjectID)}
	case errors.As(err, &ol):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_OBJECT_LOST, Message: ol.Message, ObjectId: unhex(ol.ObjectID)}
	case errors.As(err, &gt):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_GET_TIMEOUT, Message: msg, ObjectId: unhex(gt.ObjectID), TaskName: gt.TaskName, TaskId: unhex(gt.TaskID)}
	case errors.As(err, &cn):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_CANCELLED, Message: msg, TaskName: cn.TaskName, TaskId: unhex(cn.TaskID)}
	case errors.As(err, &od):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_OWNER_DIED, Message: od.Message, ObjectId: unhex(od.ObjectID)}
	case errors.As(err, &nd):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_NODE_DIED, Message: nd.Message, TaskName: nd.TaskName, TaskId: unhex(nd.TaskID), NodeId: unhex(nd.NodeID)}
	case errors.As(err, &us):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_UNSCHEDULABLE, Message: us.Reason, TaskName: us.TaskName, TaskId: unhex(us.TaskID)}
	case errors.As(err, &fl):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_FORWARD_LOST, Message: fl.Message, TaskName: fl.TaskName, TaskId: unhex(fl.TaskID), NodeId: unhex(fl.NodeID)}
	case errors.As(err, &re):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_RESOURCE_EXHAUSTED, Message: re.Message, TaskName: re.TaskName, TaskId: unhex(re.TaskID), NodeId: unhex(re.NodeID)}
	case errors.As(err, &me):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_MALFORMED, Message: msg}
	case errors.As(err, &nr):
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_NOT_FOUND, Message: msg}
	case errors.As(err, &cd):
		return &atollpb.ErrorInfo{Code: cd.Code, Message: cd.Message}
	}
	return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: msg}
}

// FromProto converts a wire error back to its typed form.
func FromProto(info *atollpb.ErrorInfo) error {
	if info == nil {
		return nil
	}
	switch info.Code {
	case atollpb.ErrorCode_TASK_ERROR:
		msg := clip(info.Message, MaxMessage)
		return &TaskError{TaskName: clip(info.TaskName, maxTypeName), TaskID: hex.EncodeToString(info.TaskId), Message: msg,
			RemoteStack: clip(info.RemoteStack, MaxStack), ErrorType: clip(info.ErrorType, maxTypeName),
			UnregisteredType: clip(info.UnregisteredType, maxTypeName), Cause: decodeCause(info, msg)}
	case atollpb.ErrorCode_WORKER_CRASHED:
		return &WorkerCrashedError{TaskName: info.TaskName, TaskID: hex.EncodeToString(info.TaskId), Message: info.Message}
	case atollpb.ErrorCode_ACTOR_DIED:
		return &ActorDiedError{ActorID: hex.EncodeToString(info.ActorId), Name: info.TaskName, Message: info.Message}
	case atollpb.ErrorCode_OBJECT_STORE_FULL:
		return storeFullFromWire(hex.EncodeToString(info.ObjectId), info.Message)
	case atollpb.ErrorCode_OBJECT_LOST:
		return &ObjectLostError{ObjectID: hex.EncodeToString(info.ObjectId), Message: info.Message}
	case atollpb.ErrorCode_OBJECT_RECONSTRUCTION_FAILED:
		return &ObjectReconstructionFailedError{ObjectID: hex.EncodeToString(info.ObjectId), Reason: info.Message}
	case atollpb.ErrorCode_GET_TIMEOUT:
		return &GetTimeoutError{ObjectID: hex.EncodeToString(info.ObjectId), TaskName: info.TaskName, TaskID: hexOrEmpty(info.TaskId)}
	case atollpb.ErrorCode_CANCELLED:
		return &CancelledError{TaskName: info.TaskName, TaskID: hex.EncodeToString(info.TaskId)}
	case atollpb.ErrorCode_OWNER_DIED:
		return &OwnerDiedError{ObjectID: hex.EncodeToString(info.ObjectId), Message: info.Message}
	case atollpb.ErrorCode_NODE_DIED:
		return &NodeDiedError{NodeID: hex.EncodeToString(info.NodeId), TaskName: info.TaskName, TaskID: hex.EncodeToString(info.TaskId), Message: info.Message}
	case atollpb.ErrorCode_UNSCHEDULABLE:
		return &UnschedulableError{TaskName: info.TaskName, TaskID: hex.EncodeToString(info.TaskId), Reason: info.Message}
	case atollpb.ErrorCode_FORWARD_LOST:
		return &ForwardLostError{NodeID: hex.EncodeToString(info.NodeId), TaskName: info.TaskName, TaskID: hex.EncodeToString(info.TaskId), Message: info.Message}
	case atollpb.ErrorCode_RESOURCE_EXHAUSTED:
		return &ResourceExhaustedError{NodeID: hex.EncodeToString(info.NodeId), TaskName: info.TaskName, TaskID: hex.EncodeToString(info.TaskId), Message: info.Message}
	}
	return &CodeError{Code: info.Code, Message: info.Message}
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// hexOrEmpty is b in hex, "" for none.
func hexOrEmpty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return hex.EncodeToString(b)
}
