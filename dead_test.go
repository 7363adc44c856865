package atoll_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestDriverDeclaredDead: when the cluster declares the driver's node dead
// (here the GCS is told so, as the failure detector would), the driver's
// pending task fails at once with NodeDiedError instead of waiting
// forever, and so does every later submission.
func TestDriverDeclaredDead(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1}})
	ctx := testmain.JoinCluster(t, c)
	pending := holdFor.Remote(ctx, atoll.Value(time.Minute))
	testutil.Eventually(t, "the long task to run", func() bool {
		for i := range c.Len() {
			if x, ok := nodeStatus(ctx, c, c.Node(i).ID); ok && x.Running > 0 {
				return true
			}
		}
		return false
	})

	nc, _, err := clusterclient.Dial(c.Address(), "test", c.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	self, err := hex.DecodeString(atoll.CurrentNodeID())
	if err != nil {
		t.Fatal(err)
	}
	if err := gcs.NewClient(nc, gcs.ClientOptions{}).MarkNodeDead(ctx, self, false, "test"); err != nil {
		t.Fatal(err)
	}

	if _, err := atoll.Get(ctx, pending); !errors.Is(err, atoll.ErrNodeDied) || !strings.Contains(err.Error(), "declared this driver's node dead") {
		t.Fatalf("the pending task: %v, want NodeDiedError", err)
	}
	if _, err := atoll.Get(ctx, nodeOf.Remote(ctx, atoll.Value(1))); !errors.Is(err, atoll.ErrNodeDied) {
		t.Fatalf("a task submitted afterwards: %v, want NodeDiedError", err)
	}
}
