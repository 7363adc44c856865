package nodeconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// TestEverySettingHasAFlag: each of Config's settings has an `atoll
// start` flag or a reason not to (notFlags), and every reason names a
// setting that exists.
func TestEverySettingHasAFlag(t *testing.T) {
	var c Config
	f := BindFlags(pflag.NewFlagSet("start", pflag.ContinueOnError), &c)
	fields := settingFields()
	for _, field := range fields {
		_, bound := f.names[field]
		_, why := notFlags[field]
		switch {
		case bound && why:
			t.Errorf("%s has a flag (--%s) and a reason not to", field, f.names[field])
		case !bound && !why:
			t.Errorf("%s has no flag: bind one in BindFlags or say why not in notFlags", field)
		}
		if bound && fieldDocs[field] == "" {
			t.Errorf("%s: no usage (run go generate)", field)
		}
	}
	for field := range notFlags {
		if !slices.Contains(fields, field) {
			t.Errorf("notFlags names %s, which is not a setting", field)
		}
	}
	for field := range envFields {
		if !slices.Contains(fields, field) {
			t.Errorf("envFields names %s, which is not a setting", field)
		}
	}
}

func parseFlags(t *testing.T, args ...string) (*Config, *Flags) {
	t.Helper()
	var c Config
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	f := BindFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return &c, f
}

// The flags' values mean what `atoll start` documents: a port of 0 picks
// a free one, --num-cpus 0 gives no CPUs, a metrics port given is not
// best effort, paths become absolute, sizes and lists are read.
func TestFlagValues(t *testing.T) {
	c, f := parseFlags(t, "--head", "--gossip-port=0", "--num-cpus", "0", "--metrics-port", "9100", "--object-store-memory", "2GiB",
		"--spill-dirs", "/a, /b", "--resources", "GPU=2", "--store-full-timeout", "3s", "--no-spill", "--node-ip", "::ffff:10.0.0.1")
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	switch {
	case !c.Head || c.GossipPort != 0 || !c.RandomPorts || c.Port != DefaultPort:
		t.Errorf("ports: %+v", c)
	case c.NumCPUs != NoCPUs:
		t.Errorf("--num-cpus 0: %v, want NoCPUs", c.NumCPUs)
	case c.MetricsPort != 9100 || c.MetricsBestEffort:
		t.Errorf("--metrics-port 9100: %d, best effort %v", c.MetricsPort, c.MetricsBestEffort)
	case c.ObjectStoreMemory != 2<<30 || !slices.Equal(c.SpillDirs, []string{"/a", "/b"}) || c.Resources["GPU"] != 2:
		t.Errorf("store: %+v", c)
	case c.StoreFullTimeout.Seconds() != 3 || !c.NoSpill || c.NodeIP != "10.0.0.1":
		t.Errorf("store and IP: %+v", c)
	}
	if d, _ := parseFlags(t); !d.Dashboard || d.DashboardPort != DefaultDashboardPort || !d.MetricsBestEffort || d.RandomPorts {
		t.Errorf("defaults: %+v", d)
	}
}

// A malformed value is kept for Check, which names the flag; Validate
// checks the settings naming the flags.
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--resources", "GPU"}, `--resources "GPU": entry "GPU": want NAME=N`},
		{[]string{"--object-store-memory", "0"}, `--object-store-memory "0": want a positive size`},
		{[]string{"--nats", "nats://"}, `--nats "nats://": want HOST:PORT`},
		{[]string{"--num-cpus", "-1"}, "--num-cpus -1: want a number >= 0"},
		{[]string{"--failure-timeout", "0s"}, "--failure-timeout 0s: want a positive duration"},
		{[]string{"--metrics-port", "-1"}, "--metrics-port -1: want a port from 1 to 65535"},
		{[]string{"--gcs-dir", ""}, "--gcs-dir: want a directory"},
		{[]string{"--amm-policies", "Shuffle"}, "Shuffle"},
	} {
		_, f := parseFlags(t, tc.args...)
		if err := f.Check(); !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--head", "--gossip-port", "70000"}, "--gossip-port 70000: want a port from 0 to 65535"},
		{[]string{"--head", "--node-ip", "my-host"}, `--node-ip "my-host": want an IP address`},
		{[]string{"--head", "--dashboard-trace-url", "x"}, `--dashboard-trace-url "x": want an http(s) URL`},
		{[]string{"--address", "h:1", "--nats", "h:2", "--include-dashboard=false"}, "--nats is the head's (other nodes join --address)"},
		{[]string{"--head", "--amm-interval", "-1s"}, "--amm-interval -1s: must not be negative"},
	} {
		c, f := parseFlags(t, tc.args...)
		if err := f.Check(); err != nil {
			t.Errorf("%q: Check: %v", tc.args, err)
			continue
		}
		if err := f.Validate(c); !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	// Text the flag's type cannot read fails the parsing, as pflag's own
	// types do.
	var c Config
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	BindFlags(fs, &c)
	if err := fs.Parse([]string{"--port", "many"}); err == nil {
		t.Error("--port many parsed")
	}
}

// A flag's text reads back to the same setting (the background node
// `atoll start` runs gets the flags it was given, as text).
func TestFlagsReadBack(t *testing.T) {
	args := []string{"--head", "--port", "0", "--resources", "GPU=1,disk=2", "--object-store-memory", "64MiB", "--num-cpus", "0",
		"--spill-dirs", "/a,/b", "--amm-policies", "Replicate,Rebalance:0.05", "--failure-timeout", "1500ms", "--saturation", "2.5"}
	c, f := parseFlags(t, args...)
	var again []string
	f.fs.Visit(func(fl *pflag.Flag) { again = append(again, "--"+fl.Name+"="+fl.Value.String()) })
	c2, _ := parseFlags(t, again...)
	if !slices.Equal(c.SpillDirs, c2.SpillDirs) || c.Port != c2.Port || c.RandomPorts != c2.RandomPorts || c.ObjectStoreMemory != c2.ObjectStoreMemory ||
		c.NumCPUs != c2.NumCPUs || c.FailureTimeout != c2.FailureTimeout || c.Saturation != c2.Saturation ||
		len(c.AMMPolicies) != len(c2.AMMPolicies) || c.Resources["disk"] != c2.Resources["disk"] {
		t.Errorf("%q read back as %q: %+v, want %+v", args, again, c2, c)
	}
}
