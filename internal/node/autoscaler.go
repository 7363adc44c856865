package node

import (
	"fmt"
	"path/filepath"

	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/autoscaler"
	_ "github.com/atoll-runtime/atoll/internal/autoscaler/local" // the "local" provider
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// startAutoscaler reads the head's cluster file (Config.Autoscaler) and
// spawns the autoscaler ("autoscaler", after the AMM, which drains for
// it) with the file's provider: the nodes it launches join this head
// with its credentials.
func (n *Node) startAutoscaler() error {
	file, err := autoscaler.ReadClusterFile(n.cfg.Autoscaler)
	if err != nil {
		return fmt.Errorf("atoll: autoscaler: %w", err)
	}
	creds := n.cfg.Credentials
	if !n.sec.Secret.IsZero() {
		creds.Secret, creds.SecretFile = n.sec.Secret.Hex(), ""
	}
	address := n.clusterAddress
	if address == "" {
		address = n.cfg.NATSURL
	}
	provider, err := autoscaler.NewProvider(autoscaler.ProviderEnv{File: file, HeadAddress: address, Credentials: creds,
		Dir: filepath.Join(n.sessionDir, "autoscaler")})
	if err != nil {
		return err
	}
	a, err := autoscaler.New(autoscaler.Config{File: file, Provider: provider, Conn: n.nc, GCS: n.gcsClient, Drain: n.amm.DrainIfIdle,
		Node: nodeconfig.Config{Address: address, NodeIP: n.cfg.NodeIP, FailureTimeout: n.cfg.FailureTimeout, Credentials: creds}, Logger: n.log})
	if err != nil {
		_ = provider.Close()
		return err
	}
	props := a.Props().Configure(actors.RestartForever(n.log, "autoscaler"))
	if n.autoscalerPID, err = n.system.Root.SpawnNamed(props, "autoscaler"); err != nil {
		_ = provider.Close()
		return fmt.Errorf("atoll: start the autoscaler: %w", err)
	}
	n.autoscaler, n.provider = a, provider
	return nil
}

// Autoscaler is the head's autoscaler; nil without a cluster file.
func (n *Node) Autoscaler() *autoscaler.Autoscaler { return n.autoscaler }
