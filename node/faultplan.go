package node

import (
	"os"

	"github.com/atoll-runtime/atoll/faultplan"
)

// loadFaultPlan gives a node without a fault injector the message rules
// for its role of the plan faultplan.EnvPlan names, if set (node
// processes of a chaos run; the driver's node gets them from
// atoll.WithFaultPlan instead).
func (n *Node) loadFaultPlan() error {
	path := os.Getenv(faultplan.EnvPlan)
	if path == "" || n.cfg.Faults != nil {
		return nil
	}
	p, err := faultplan.Load(path)
	if err != nil {
		return err
	}
	role := faultplan.Workers
	switch {
	case n.cfg.Driver || n.cfg.embedded():
		role = faultplan.Driver
	case n.cfg.Head:
		role = faultplan.Head
	}
	n.cfg.Faults = p.Injector(role)
	n.log.Warn("fault plan loaded", "file", path, "seed", p.Seed, "rules", len(p.Rules), "role", role)
	return nil
}
