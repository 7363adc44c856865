package main

import (
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/atoll-runtime/atoll/internal/dashboard"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// dashboardConfig checks the dashboard's flags of `atoll start` and sets
// them in cfg: a head serves the dashboard unless
// --include-dashboard=false; other nodes take none of these flags.
func (f *startFlags) dashboardConfig(fs *pflag.FlagSet, cfg *nodeconfig.Config) error {
	if f.logFile != "" {
		abs, err := filepath.Abs(f.logFile)
		if err != nil {
			return errs.Invalidf("--log-file %q: %v", f.logFile, err)
		}
		cfg.LogFile = abs
	}
	if !f.head {
		for _, name := range []string{"include-dashboard", "dashboard-port", "dashboard-trace-url"} {
			if fs.Changed(name) {
				return errs.Invalidf("--%s is for the head (--head): it serves the cluster's dashboard", name)
			}
		}
		return nil
	}
	if !f.dashboard {
		if fs.Changed("dashboard-port") || fs.Changed("dashboard-trace-url") {
			return errs.Invalidf("--dashboard-port and --dashboard-trace-url need the dashboard: drop --include-dashboard=false")
		}
		return nil
	}
	if err := dashboard.CheckTraceURL("--dashboard-trace-url", f.dashboardTraceURL); err != nil {
		return err
	}
	cfg.Dashboard, cfg.DashboardPort, cfg.DashboardTraceURL = true, f.dashboardPort, f.dashboardTraceURL
	return nil
}
