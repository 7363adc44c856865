package testcluster

import (
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func TestConfig(t *testing.T) {
	c := &Cluster{t: t, dir: t.TempDir(), opts: Options{
		Resources: func(i int) map[string]float64 { return map[string]float64{"GPU": float64(i)} },
		Config:    func(i int, cfg *nodeconfig.Config) { cfg.Port, cfg.NumCPUs = 99, 4 },
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
	if other.Resources["GPU"] != 2 || head.SessionDir == other.SessionDir {
		t.Errorf("resources %v, session dirs %s %s", other.Resources, head.SessionDir, other.SessionDir)
	}
	if env := localcluster.FilterEnv([]string{"A=1", nodeconfig.EnvNode + "={}", "B=2"}, nodeconfig.EnvNode); strings.Join(env, " ") != "A=1 B=2" {
		t.Errorf("filterEnv: %q", env)
	}
}
