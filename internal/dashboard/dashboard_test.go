package dashboard_test

import (
	"testing"
)

// TestDashboard starts a 3-node cluster whose head serves the dashboard,
// runs a job on it (tasks spread over the nodes, a failing task, an
// actor's calls), then checks the JSON API over plain HTTP and the page
// in headless Chromium (skipped where Chromium is not installed).
func TestDashboard(t *testing.T) {
	c, ctx := startCluster(t)
	t.Run("api", func(t *testing.T) { checkAPI(t, c) })
	t.Run("browser", func(t *testing.T) { checkBrowser(ctx, t, c) })
}
