package dashboard_test

import (
	"testing"

	"github.com/atoll-runtime/atoll/internal/testcluster"
)

func checkBrowser(t *testing.T, c *testcluster.Cluster) { t.Skip("todo") }
