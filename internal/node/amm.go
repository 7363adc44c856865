package node

import (
	"fmt"

	"github.com/atoll-runtime/atoll/internal/cluster"
)

// startAMM spawns the Active Memory Manager on the head, supervised by
// the root guardian: its policies (Config.AMMPolicies,
// cluster.EnvAMMPolicies) run if it is on (Config.AMM, cluster.EnvAMM;
// `atoll amm start|stop` changes it later), and drains run either way.
func (n *Node) startAMM() error {
	on, interval, policies := n.cfg.AMM, n.cfg.AMMInterval, n.cfg.AMMPolicies // the environment applied (nodeconfig.ApplyEnv)
	var err error
	n.amm, err = cluster.NewAMM(cluster.AMMConfig{Conn: n.nc, GCS: n.gcsClient, Interval: interval, Enabled: on,
		Policies: policies, Logger: n.log})
	if err != nil {
		return err
	}
	if n.ammPID, err = n.system.Root.SpawnNamed(n.amm.Props(), "amm"); err != nil {
		return fmt.Errorf("atoll: start the AMM: %w", err)
	}
	if on {
		n.log.Info("active memory manager on", "interval", interval)
	}
	return nil
}

// AMM is the head's Active Memory Manager; nil when the node is not a
// head.
func (n *Node) AMM() *cluster.AMM { return n.amm }
