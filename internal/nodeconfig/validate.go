package nodeconfig

import (
	"log/slog"
	"math"
	"net"
	goruntime "runtime"

	"github.com/atoll-runtime/atoll/internal/dashboard"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// WithDefaults validates c and returns it with its defaults applied (see
// each field). Invalid or conflicting settings are ErrInvalidArgument,
// naming the fields as node.Config.Field. It is the one place the
// settings are checked: node.Start calls it, and `atoll start` runs the
// same checks naming its flags (Flags.Validate).
func (c Config) WithDefaults() (Config, error) {
	if err := c.validate(goName); err != nil {
		return c, err
	}
	switch cpus := c.NumCPUs; {
	case cpus == NoCPUs:
		c.NumCPUs = 0
	case cpus == 0 && !c.Driver:
		c.NumCPUs = float64(goruntime.NumCPU())
	}
	if !c.Embedded() {
		// An embedded node opens no port and gossips with no one: it
		// ignores these settings.
		if c.NodeIP == "" {
			c.NodeIP = "127.0.0.1"
		}
		if !c.RandomPorts && !c.Driver {
			c.Port = orDefault(c.Port, DefaultPort)
			c.GossipPort = orDefault(c.GossipPort, DefaultGossipPort)
			c.TransferPort = orDefault(c.TransferPort, DefaultTransferPort)
		}
	}
	if c.Dashboard && !c.RandomPorts {
		c.DashboardPort = orDefault(c.DashboardPort, DefaultDashboardPort)
	}
	if c.Dashboard && c.DashboardHost == "" {
		c.DashboardHost = "127.0.0.1"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// goName names a field as a Go program sets it.
func goName(field string) string { return "node.Config." + field }

// validate checks c; name turns a field's name into the one errors give
// it (a Go field, a command-line flag).
func (c *Config) validate(name func(field string) string) error {
	switch {
	case c.Head && c.Address != "":
		return errs.Invalidf("%s and %s are exclusive (the head is the address others join)", name("Head"), name("Address"))
	case c.Driver && c.Address == "":
		return errs.Invalidf("%s: a driver's node joins a cluster (%s)", name("Driver"), name("Address"))
	case c.NATSURL != "" && !c.Head:
		return errs.Invalidf("%s is the head's (other nodes join %s)", name("NATSURL"), name("Address"))
	case c.GCSDir != "" && !c.Head:
		return errs.Invalidf("%s is the head's (where its embedded NATS keeps the GCS's tables)", name("GCSDir"))
	case c.GCSDir != "" && c.NATSURL != "":
		return errs.Invalidf("%s and %s conflict: with %[2]s the GCS's tables live on that NATS server", name("GCSDir"), name("NATSURL"))
	case c.Autoscaler != "" && !c.Head:
		return errs.Invalidf("%s is the head's (it runs the autoscaler)", name("Autoscaler"))
	}
	switch cpus := c.NumCPUs; {
	case math.IsNaN(cpus) || math.IsInf(cpus, 0):
		return errs.Invalidf("%s %g: want a number", name("NumCPUs"), cpus)
	case cpus < 0 && cpus != NoCPUs:
		return errs.Invalidf("%s %g: must not be negative (NoCPUs for none)", name("NumCPUs"), cpus)
	}
	if !c.Embedded() {
		for _, p := range []struct {
			field string
			v     int
		}{{"Port", c.Port}, {"GossipPort", c.GossipPort}, {"TransferPort", c.TransferPort}} {
			if p.v < 0 || p.v > math.MaxUint16 {
				return errs.Invalidf("%s %d: want a port from 0 to 65535", name(p.field), p.v)
			}
		}
		if c.FailureTimeout < 0 {
			return errs.Invalidf("%s %v: must not be negative", name("FailureTimeout"), c.FailureTimeout)
		}
		if c.RejoinGrace < 0 {
			return errs.Invalidf("%s %v: must not be negative", name("RejoinGrace"), c.RejoinGrace)
		}
		if c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil {
			return errs.Invalidf("%s %q: want an IP address, e.g. 10.0.0.2", name("NodeIP"), c.NodeIP)
		}
	}
	if p := c.MetricsPort; p < MetricsAnyPort || p > math.MaxUint16 {
		return errs.Invalidf("%s %d: want 1 to 65535, 0 (off) or %d (a free port)", name("MetricsPort"), p, MetricsAnyPort)
	}
	if err := c.validateDashboard(name); err != nil {
		return err
	}
	if c.AMMInterval < 0 {
		return errs.Invalidf("%s %v: must not be negative", name("AMMInterval"), c.AMMInterval)
	}
	return nil
}

// validateDashboard checks the dashboard's settings.
func (c *Config) validateDashboard(name func(string) string) error {
	if c.DashboardPort < 0 || c.DashboardPort > math.MaxUint16 {
		return errs.Invalidf("%s %d: want a port from 0 to 65535", name("DashboardPort"), c.DashboardPort)
	}
	if !c.Dashboard {
		if c.DashboardPort != 0 || c.DashboardTraceURL != "" {
			return errs.Invalidf("%s and %s need %s", name("DashboardPort"), name("DashboardTraceURL"), name("Dashboard"))
		}
		return nil
	}
	if !c.Head {
		return errs.Invalidf("%s is the head's (it serves the cluster's dashboard)", name("Dashboard"))
	}
	return dashboard.CheckTraceURL(name("DashboardTraceURL"), c.DashboardTraceURL)
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
