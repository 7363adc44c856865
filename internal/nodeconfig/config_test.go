package nodeconfig_test

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

// WithDefaults fills what each kind of node leaves zero, as the fields'
// docs say.
func TestWithDefaults(t *testing.T) {
	ncpu := float64(runtime.NumCPU())
	for _, tc := range []struct {
		name string
		in   nodeconfig.Config
		want func(c nodeconfig.Config) bool
	}{
		{"embedded: every CPU, no ports", nodeconfig.Config{}, func(c nodeconfig.Config) bool {
			return c.NumCPUs == ncpu && c.Port == 0 && c.NodeIP == "" && c.Logger != nil
		}},
		{"head: well-known ports", nodeconfig.Config{Head: true}, func(c nodeconfig.Config) bool {
			return c.Port == nodeconfig.DefaultPort && c.GossipPort == nodeconfig.DefaultGossipPort &&
				c.TransferPort == nodeconfig.DefaultTransferPort && c.NodeIP == "127.0.0.1"
		}},
		{"head with random ports", nodeconfig.Config{Head: true, RandomPorts: true, Dashboard: true}, func(c nodeconfig.Config) bool {
			return c.Port == 0 && c.DashboardPort == 0
		}},
		{"dashboard port", nodeconfig.Config{Head: true, Dashboard: true}, func(c nodeconfig.Config) bool {
			return c.DashboardPort == nodeconfig.DefaultDashboardPort
		}},
		{"driver's node: no CPUs, free ports", nodeconfig.Config{Address: "h:1", Driver: true}, func(c nodeconfig.Config) bool {
			return c.NumCPUs == 0 && c.GossipPort == 0
		}},
		{"no CPUs", nodeconfig.Config{NumCPUs: nodeconfig.NoCPUs}, func(c nodeconfig.Config) bool { return c.NumCPUs == 0 }},
	} {
		got, err := tc.in.WithDefaults()
		if err != nil || !tc.want(got) {
			t.Errorf("%s: %+v, %v", tc.name, got, err)
		}
	}
}

// WithDefaults refuses invalid or conflicting settings with
// ErrInvalidArgument, naming the fields as a Go program sets them.
func TestWithDefaultsErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  nodeconfig.Config
		want string
	}{
		{nodeconfig.Config{Head: true, Address: "h:1"}, "node.Config.Head and node.Config.Address are exclusive"},
		{nodeconfig.Config{Driver: true}, "node.Config.Driver: a driver's node joins a cluster"},
		{nodeconfig.Config{Address: "h:1", NATSURL: "nats://h:2"}, "node.Config.NATSURL is the head's"},
		{nodeconfig.Config{GCSDir: "/x"}, "node.Config.GCSDir is the head's"},
		{nodeconfig.Config{Head: true, NATSURL: "nats://h:2", GCSDir: "/x"}, "node.Config.GCSDir and node.Config.NATSURL conflict"},
		{nodeconfig.Config{NumCPUs: -2}, "node.Config.NumCPUs -2: must not be negative"},
		{nodeconfig.Config{NumCPUs: math.Inf(1)}, "want a number"},
		{nodeconfig.Config{Head: true, TransferPort: -1}, "node.Config.TransferPort -1: want a port"},
		{nodeconfig.Config{Head: true, FailureTimeout: -time.Second}, "node.Config.FailureTimeout -1s"},
		{nodeconfig.Config{Head: true, RejoinGrace: -time.Second}, "node.Config.RejoinGrace -1s: must not be negative"},
		{nodeconfig.Config{Head: true, NodeIP: "x"}, `node.Config.NodeIP "x": want an IP address`},
		{nodeconfig.Config{MetricsPort: 70000}, "node.Config.MetricsPort 70000"},
		{nodeconfig.Config{DashboardPort: 80}, "need node.Config.Dashboard"},
		{nodeconfig.Config{Dashboard: true}, "node.Config.Dashboard is the head's"},
		{nodeconfig.Config{Head: true, Dashboard: true, DashboardTraceURL: "x"}, `node.Config.DashboardTraceURL "x"`},
		{nodeconfig.Config{AMMInterval: -1}, "node.Config.AMMInterval"},
	} {
		_, err := tc.cfg.WithDefaults()
		if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// ApplyEnv fills empty credentials from the environment, and on a head
// lets the AMM's variables win over the settings.
func TestApplyEnv(t *testing.T) {
	t.Setenv(nodeconfig.EnvTLSCA, "/ca.pem")
	t.Setenv(nodeconfig.EnvSecret, "from-env")
	t.Setenv(cluster.EnvAMM, "1")
	t.Setenv(cluster.EnvAMMInterval, "750ms")
	t.Setenv(cluster.EnvAMMPolicies, "Replicate")
	head := nodeconfig.Config{Head: true, AMMPolicies: []amm.Policy{amm.ReduceReplicas{}}, Credentials: nodeconfig.Credentials{Secret: "given"}}
	if err := head.ApplyEnv(); err != nil {
		t.Fatal(err)
	}
	if head.TLSCA != "/ca.pem" || head.Secret != "given" || !head.AMM || head.AMMInterval != 750*time.Millisecond ||
		len(head.AMMPolicies) != 1 || head.AMMPolicies[0] != (amm.Replicate{}) {
		t.Errorf("head: %+v", head)
	}
	member := nodeconfig.Config{Address: "h:1"}
	t.Setenv(cluster.EnvAMM, "garbage") // only the head reads it
	if err := member.ApplyEnv(); err != nil || member.AMM || member.Secret != "from-env" {
		t.Errorf("member: %+v, %v", member, err)
	}
	if err := head.ApplyEnv(); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("a bad %s on the head: %v", cluster.EnvAMM, err)
	}
}

// A Config travels to a node process as EnvNode's JSON.
func TestEnviron(t *testing.T) {
	cfg := nodeconfig.Config{Head: true, NumCPUs: 2, GCSDir: "/gcs", Credentials: nodeconfig.Credentials{Secret: "s"}, Dashboard: true}
	kv, err := cfg.Environ()
	if err != nil {
		t.Fatal(err)
	}
	name, val, _ := strings.Cut(kv, "=")
	got, err := nodeconfig.FromEnvNode(val)
	if name != nodeconfig.EnvNode || err != nil || got.NumCPUs != 2 || got.GCSDir != "/gcs" || got.Secret != "s" || !got.Dashboard || !got.Head {
		t.Errorf("%s: %+v, %v", kv, got, err)
	}
	for _, bad := range []string{"{", `{"NumCPUs": 2}`} {
		if _, err := nodeconfig.FromEnvNode(bad); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
