package security_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestNoSecretInWorkerEnv: nodes started with ATOLL_SECRET and
// ATOLL_READER_TOKEN in their environment run a submitted job whose
// driver, task and actor each look for credentials in their environment
// (os.Environ and /proc/self/environ): none finds any. The driver still
// joins the cluster: its credentials come on a descriptor it reads once.
func TestNoSecretInWorkerEnv(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "versiondriver")
	buildVersionDriver(t, bin, "v1") // its "env" mode prints no version
	// In the nodes' environment (they take their own secret from their
	// configuration): what a node joining from another machine has.
	t.Setenv(nodeconfig.EnvSecret, strings.Repeat("ab", 32))
	t.Setenv(nodeconfig.EnvReaderToken, "reader-token-in-the-environment")
	c := testcluster.Start(t, testcluster.Options{Nodes: 2})
	nc, _, err := clusterclient.Dial(c.Address(), "test", c.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := jobs.Submit(ctx, nc, jobs.Submission{Binary: bin, Args: []string{"env"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var info *atollpb.JobInfo
	testutil.EventuallyWithin(t, 2*time.Minute, "the job to end", func() bool {
		info, err = jobs.Get(ctx, nc, id.String())
		return err == nil && info.Finished
	})
	node, err := jobs.LogNode(info)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := jobs.FollowLog(ctx, nc, node, atollpb.LogKind_LOG_JOB, info.JobId, 0, false, &log); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"env: driver clean\n", "env: task clean <nil>\n", "env: actor clean <nil>\n"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the job's log lacks %q (state %s):\n%s", want, info.State, log.String())
		}
	}
}
