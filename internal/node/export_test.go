package node

import (
	"context"
	"io"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// ConfigFromEnvForTest checks an EnvNode value as RunFromEnv does.
func ConfigFromEnvForTest(s string) error {
	_, err := nodeconfig.FromEnvNode(s)
	return err
}

// RunForTest runs RunFromEnv's body with the EnvNode value s and returns
// the exit code RunFromEnv would exit with.
func RunForTest(ctx context.Context, s string, stdout, stderr io.Writer) int {
	cfg, err := nodeconfig.FromEnvNode(s)
	if err != nil {
		return 2
	}
	return run(ctx, cfg, stdout, stderr)
}
