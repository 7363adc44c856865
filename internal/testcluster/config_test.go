package testcluster

import (
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func TestConfig(t *testing.T) {
	c := &Cluster{t: t, dir: t.TempDir(), opts: Options{
		Node: nodeconfig.Config{Resources: map[string]float64{"disk": 1}, NATSURL: "nats://127.0.0.1:4222", Dashboard: true},
		Config: func(i int, cfg *nodeconfig.Config) {
			cfg.Port, cfg.NumCPUs = 99, 4
			cfg.Resources["GPU"] = float64(i)
		},
	}.withDefaults(), address: "127.0.0.1:5000"}
	head, other := c.config(0), c.config(2)
	if !head.Head || head.Address != "" || other.Head || other.Address != "127.0.0.1:5000" {
		t.Errorf("roles: head %+v, other %+v", head, other)
	}
	for _, cfg := range []nodeconfig.Config{head, other} {
		if cfg.NodeIP != "127.0.0.1" || !cfg.RandomPorts || cfg.Port != 0 || cfg.GossipPort != 0 || cfg.TransferPort != 0 ||
			cfg.NumCPUs != 4 || cfg.ObjectStoreMemory != DefaultObjectStoreMemory || cfg.FailureTimeout != DefaultFailureTimeout ||
			cfg.SessionDir == "" {
			t.Errorf("config %+v", cfg)
		}
	}
	if other.Resources["GPU"] != 2 || other.Resources["disk"] != 1 || head.Resources["GPU"] != 0 || head.SessionDir == other.SessionDir {
		t.Errorf("resources %v and %v, session dirs %s %s", head.Resources, other.Resources, head.SessionDir, other.SessionDir)
	}
	// The head's settings stay the head's.
	if head.NATSURL == "" || !head.Dashboard || head.GCSDir != "" || other.NATSURL != "" || other.Dashboard || !head.FaultInjection {
		t.Errorf("head-only settings: head %+v, other %+v", head, other)
	}
	if env := localcluster.FilterEnv([]string{"A=1", nodeconfig.EnvNode + "={}", "B=2"}, nodeconfig.EnvNode); strings.Join(env, " ") != "A=1 B=2" {
		t.Errorf("filterEnv: %q", env)
	}
}
