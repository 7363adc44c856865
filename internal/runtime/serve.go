package runtime

import (
	"os"

	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Serving reports whether atoll started this process to serve: a worker
// process (its raylet re-executed the binary with raylet.EnvWorker) or a
// cluster node (started with nodeconfig.EnvNode, as internal/testcluster and
// internal/localcluster run test and sample binaries).
func Serving() bool { return os.Getenv(raylet.EnvWorker) == "1" || os.Getenv(nodeconfig.EnvNode) != "" }

// Serve serves, and never returns, if atoll started this process to serve
// (Serving): a worker process runs the tasks and the actor its raylet
// sends it with s (a Worker) until the raylet lets it go; a node process
// runs its node (node.RunFromEnv) until it is stopped. Otherwise it
// returns at once.
func Serve(s Settings) {
	if os.Getenv(raylet.EnvWorker) == "1" {
		serveWorker(s) // never returns
	}
	if os.Getenv(nodeconfig.EnvNode) != "" {
		node.RunFromEnv() // never returns
	}
}
