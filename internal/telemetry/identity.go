package telemetry

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Role is what an atoll process is, for its spans' resource (atoll.role
// and the default service.name, "atoll-<role>").
type Role string

// The roles of atoll processes.
const (
	RoleDriver Role = "driver"
	RoleNode   Role = "node"
	RoleWorker Role = "worker"
)

// Identity names this process in its spans' resource.
type Identity struct {
	Role     Role
	NodeID   string // hex; empty when not known yet (a driver's, before its node starts)
	WorkerID string // worker processes
	JobID    string // drivers: the job they run
}

var (
	identityMu sync.Mutex
	identity   Identity
)

// SetIdentity records what this process is (a driver at Init, a worker
// process at start). A node started inside a driver keeps the driver's:
// see DefaultIdentity.
func SetIdentity(id Identity) {
	identityMu.Lock()
	identity = id
	identityMu.Unlock()
}

// DefaultIdentity records id unless this process already has a role (a
// node started by a driver keeps the driver's identity).
func DefaultIdentity(id Identity) {
	identityMu.Lock()
	if identity.Role == "" {
		identity = id
	}
	identityMu.Unlock()
}

// CurrentIdentity is what SetIdentity recorded (a node process's when
// nothing did).
func CurrentIdentity() Identity {
	identityMu.Lock()
	defer identityMu.Unlock()
	id := identity
	if id.Role == "" {
		id.Role = RoleNode
	}
	return id
}

// Attribute keys of atoll's resources.
const (
	AttrRole     = attribute.Key("atoll.role")
	AttrNodeID   = attribute.Key("atoll.node_id")
	AttrWorkerID = attribute.Key("atoll.worker_id")
	AttrJobID    = attribute.Key("atoll.job_id")
	attrService  = attribute.Key("service.name")
)

// DefaultServiceName is service.name when neither OTEL_SERVICE_NAME nor
// the job says otherwise: "atoll-driver", "atoll-node", "atoll-worker".
func DefaultServiceName(r Role) string { return "atoll-" + string(r) }

func (id Identity) attributes(jobID, service string) []attribute.KeyValue {
	if service == "" {
		service = DefaultServiceName(id.Role)
	}
	kvs := []attribute.KeyValue{attrService.String(service), AttrRole.String(string(id.Role))}
	if id.NodeID != "" {
		kvs = append(kvs, AttrNodeID.String(id.NodeID))
	}
	if id.WorkerID != "" {
		kvs = append(kvs, AttrWorkerID.String(id.WorkerID))
	}
	if jobID == "" {
		jobID = id.JobID
	}
	if jobID != "" {
		kvs = append(kvs, AttrJobID.String(jobID))
	}
	return kvs
}

// OwnResource is the resource of this process's own spans: its identity,
// then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, which win.
func OwnResource(ctx context.Context) *resource.Resource {
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(CurrentIdentity().attributes("", "")...), resource.WithFromEnv())
	if err != nil { // a malformed OTEL_RESOURCE_ATTRIBUTES: keep the rest
		return res
	}
	return res
}

// jobResource is the resource of a job's spans exported from this
// process to the job's collector: this process's role, node and worker,
// the job's id and the job's service name.
func jobResource(ctx context.Context, jobID, service string) *resource.Resource {
	res, _ := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(CurrentIdentity().attributes(jobID, service)...))
	return res
}
