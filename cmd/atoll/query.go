package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// clusterQuery is the --address flag of the commands that ask a running
// cluster something (status, list, memory, timeline).
type clusterQuery struct{ address string }

func (q *clusterQuery) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&q.address, "address", "", "`HOST:PORT` of the cluster (default $"+nodeconfig.EnvAddress+", then the address the local head recorded)")
}

// begin returns the query's context (bounded by statusTimeout) and the
// address to ask: --address, else $ATOLL_ADDRESS, else "" (the address
// the local head recorded).
func (q *clusterQuery) begin(cmd *cobra.Command) (context.Context, context.CancelFunc, string) {
	address := q.address
	if address == "" {
		address = envAddress()
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), statusTimeout)
	return ctx, cancel, address
}

// envAddress is $ATOLL_ADDRESS.
func envAddress() string { return nodeconfig.AddressFromEnv() }
