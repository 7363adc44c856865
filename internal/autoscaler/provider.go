package autoscaler

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/registry"
)

// NodeProvider launches and stops the instances nodes run on (processes
// of this machine, Kubernetes pods): the autoscaler's only way to change
// the cluster's size. Its methods may block (the autoscaler calls them
// off its actor) and are called concurrently.
type NodeProvider interface {
	// Launch starts an instance of a node type, whose node joins the
	// cluster with Node's settings (its NodeType and InstanceID set: the
	// node registers with them, which is how the autoscaler links the
	// two). It returns once the instance is started, not joined.
	Launch(ctx context.Context, typ NodeTypeSpec, node nodeconfig.Config) error
	// Terminate stops an instance (its node was drained and left, died, or
	// never joined); an instance it does not know is no error.
	Terminate(ctx context.Context, instanceID string) error
	// Instances lists the instances it runs, by id, with their node type:
	// after a restart of the head, the autoscaler takes them over.
	Instances(ctx context.Context) (map[string]string, error)
	// Close releases the provider (it does not stop instances: the local
	// provider's die with the head's process anyway).
	Close() error
}

// ProviderEnv is what a provider is made with: the cluster file, the
// head's address and credentials the nodes join with.
type ProviderEnv struct {
	File        *ClusterFile
	HeadAddress string
	Credentials nodeconfig.Credentials
	// Dir is where the provider may keep files (the head's session
	// directory: node logs of the local provider).
	Dir string
}

// ProviderFactory makes a provider of a type.
type ProviderFactory func(env ProviderEnv) (NodeProvider, error)

// providers are the provider types linked into the program, by name
// (the one registry's kind "node provider").
var providers = registry.NewKind[ProviderFactory]("node provider")

// RegisterProvider makes provider type name known (at package init: the
// local provider's package registers "local"), linked only into the
// programs that import it, the atoll command among them. A name
// registered twice panics.
func RegisterProvider(name string, f ProviderFactory) { providers.MustAdd(name, f) }

// NewProvider makes the provider the cluster file names.
func NewProvider(env ProviderEnv) (NodeProvider, error) {
	f, ok := providers.Lookup(env.File.Provider.Type)
	if !ok {
		var known []string
		for k := range providers.All {
			known = append(known, k)
		}
		return nil, errs.Invalidf("autoscaler: provider %q is not linked into this program (known: %v); the atoll command has them all: run the head with it",
			env.File.Provider.Type, known)
	}
	return f(env)
}
