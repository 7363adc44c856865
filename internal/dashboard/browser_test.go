package dashboard_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the dashboard's screenshots to testdata/ (default: the test's temporary directory)")

// chromiumInstall is how to get the browser the test drives.
const chromiumInstall = "apt-get install -y chromium"

// findChromium returns the path of Chromium (or Chrome), "" if none is
// installed.
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Viewport of the screenshots: modest, so the PNGs stay small.
const viewW, viewH = 1280, 760

// pageWait bounds each wait for the page to show something.
const pageWait = 30 * time.Second

// checkBrowser opens the dashboard in headless Chromium and waits, on
// DOM conditions, for each view to show the cluster and the job: the 3
// nodes and live charts (a blob put on node 2 while the page is open
// raises its line), the job, its tasks with trace links, the
// actors and the killed one's death cause, memory, the timeline and the
// head's log. It saves a screenshot of each view and fails on any error
// the page reports on its console (a script error, an asset the
// content security policy refused).
func checkBrowser(jobCtx context.Context, t *testing.T, c *testcluster.Cluster) {
	chromium := findChromium()
	if chromium == "" {
		t.Skipf("chromium is not installed: the browser test needs it (%s)", chromiumInstall)
	}
	base := c.DashboardURL()
	var jobs apiJobs
	getJSON(t, base+"/api/jobs", http.StatusOK, &jobs)
	if len(jobs.Jobs) != 1 {
		t.Fatalf("jobs %+v", jobs.Jobs)
	}
	job := jobs.Jobs[0].JobID
	head := c.Node(0).ID

	shots := t.TempDir()
	if *updateScreenshots {
		shots = "testdata"
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(viewW, viewH), chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR="+t.TempDir())) // Chromium leaves a directory of its own in TMPDIR
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	// The page's console: errors and uncaught exceptions fail the test.
	var (
		mu       sync.Mutex
		problems []string
		consoled sync.WaitGroup
	)
	cctx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(cctx)
	consoled.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The logs answer 401 until the test logs in: the page shows
			// its login form, the browser logs the status.
			loginAsked := strings.Contains(m.URL, "/api/logs/") && strings.Contains(m.Text, "status of 401")
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException) && !loginAsked {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line))
				mu.Unlock()
			}
		}
	})
	defer func() {
		stopConsole()
		consoled.Wait()
	}()

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s: %v (console: %q)", what, err, problems)
		}
	}
	// waitFor polls a JavaScript condition on the page (no sleeps).
	waitFor := func(cond string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(pageWait))
	}
	show := func(hash string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", hash))(ctx, tg)
			return err
		})
	}
	shoot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.CaptureScreenshot()(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644)
		})
	}

	// A node that joined and was stopped before the page opened: listed as
	// left, with why (it never reported to the page, so it draws no line).
	left := c.AddNode(nil)
	c.Stop(c.Len() - 1)
	c.WaitStatus(time.Minute, func(st *clusterclient.Status) bool {
		return slices.ContainsFunc(st.Nodes, func(n clusterclient.NodeStatus) bool { return n.NodeID == left.ID && n.Left })
	})

	do("the overview: 3 nodes and live charts, the stopped node left",
		chromedp.EmulateViewport(viewW, viewH),
		chromedp.Navigate(base+"/"),
		waitFor(`document.querySelectorAll('#nodes-table tbody tr[data-state="alive"]:not([data-role="driver"])').length === 3`),
		waitFor(fmt.Sprintf(`(() => { const r = document.querySelector('#nodes-table tbody tr[data-state="left"]');
			return r && r.dataset.nodeId === %q && r.querySelector(".node-state").textContent.includes("stopped, "); })()`, left.ID)),
		waitFor(`document.getElementById("node-sub").textContent.includes("1 left · 0 dead")`),
		waitFor(`document.getElementById("node-count").textContent === "3"`),
		waitFor(fmt.Sprintf(`document.querySelector('#nodes-table tbody tr[data-role="head"]').dataset.nodeId === %q`, head)),
		// Live: every reporting node's line has several samples.
		waitFor(`(() => { const ls = document.querySelectorAll('#chart-store polyline');
			return ls.length === 4 && [...ls].every(l => l.points.numberOfItems >= 3); })()`),
		shoot("overview"))

	do("the jobs view: the job and its tasks",
		show("#jobs"),
		waitFor(fmt.Sprintf(`(() => { const r = document.querySelector('#jobs-table tbody tr[data-job-id=%q]');
			return r && r.dataset.status === "running" && r.cells[5].textContent === "%d" && r.cells[6].textContent === "%d"; })()`,
			job, numFinished, numFails)),
		shoot("jobs"))

	do("the tasks view: the job's tasks, counted and linked to their traces",
		show("#tasks?job="+job),
		waitFor(fmt.Sprintf(`document.querySelectorAll('#tasks-table tbody tr[data-job-id=%q]').length === %d`, job, numAttempts)),
		waitFor(fmt.Sprintf(`document.getElementById("count-finished").textContent === "%d" && document.getElementById("count-failed").textContent === "%d"`,
			numFinished, numFails)),
		waitFor(fmt.Sprintf(`[...document.querySelectorAll('#tasks-table a.trace-link')].filter(a => /^http:\/\/traces\.example\/trace\/[0-9a-f]{32}$/.test(a.href)).length === %d`,
			numAttempts)),
		waitFor(`document.getElementById("filter-job").value !== ""`),
		shoot("tasks"))
	do("the tasks view's state filter",
		show("#tasks?state=failed&job="+job),
		waitFor(fmt.Sprintf(`(() => { const rs = document.querySelectorAll('#tasks-table tbody tr[data-state]');
			return rs.length === %d && [...rs].every(r => r.dataset.state === "failed" && r.cells[1].textContent === "dash.fail" &&
				r.querySelector(".task-error summary").textContent.includes("dash.fail refuses 7")); })()`, numFails)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`document.querySelector('#tasks-table tbody tr[data-state="failed"] .task-error summary').click()`)(ctx, tg)
			return err
		}),
		waitFor(`document.querySelector('#tasks-table tbody tr[data-state="failed"] .task-error pre').textContent.includes("goroutine")`),
		shoot("task-error"))

	do("the actors view: the counter alive, the victim dead with its cause",
		show("#actors"),
		waitFor(`document.querySelectorAll('#actors-table tbody tr[data-state="alive"]').length === 1`),
		waitFor(`(() => { const r = document.querySelector('#actors-table tbody tr[data-state="dead"]');
			return r && r.textContent.includes("dash-victim") && r.textContent.includes("actor_died"); })()`),
		shoot("actors"))
	do("the placement groups view: the job's detached group, created on a node",
		show("#groups"),
		waitFor(`(() => { const r = document.querySelector('#groups-table tbody tr[data-state="created"]');
			return r !== null && r.textContent.includes("dash-group") && r.textContent.includes("PACK") && r.querySelector('a') !== null; })()`),
		shoot("groups"))

	do("the memory view: every reporting node, the cluster's total and the drivers' stores apart",
		show("#memory"),
		waitFor(`(() => { const f = [...document.querySelectorAll('#memory-table tfoot tr')].map(r => r.cells[0].textContent);
			return document.querySelectorAll('#memory-table tbody tr[data-node-id]').length === 4 && f.join() === "cluster,drivers' stores"; })()`))

	do("the timeline: the job's attempts on the nodes' workers",
		show("#timeline?job="+job),
		waitFor(fmt.Sprintf(`document.querySelectorAll('#timeline rect.event').length === %d`, numAttempts)),
		waitFor(fmt.Sprintf(`document.querySelectorAll('#timeline rect.event.failed').length === %d`, numFails)),
		waitFor(`document.querySelectorAll('#timeline text.node-label').length === 3`),
		shoot("timeline"))

	do("the logs view: the head's log, after logging in with the reader token",
		show("#logs?node="+head),
		waitFor(`!document.getElementById("login").hidden`),
		shoot("login"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById("login-token").value = %q; document.getElementById("login").requestSubmit()`, readerToken))(ctx, tg)
			return err
		}),
		waitFor(`document.getElementById("login").hidden`),
		waitFor(fmt.Sprintf(`document.getElementById("log-text").textContent.includes(%q)`, "dashboard component=atoll url="+base)))
	// A node's log holds its workers' output.
	var squares apiTasks
	getJSON(t, base+"/api/tasks?limit=1&name=dash.square&node="+c.Node(1).ID, http.StatusOK, &squares)
	if len(squares.Tasks) != 1 {
		t.Fatalf("no dash.square on node 1: %+v", squares)
	}
	do("the logs view: a worker's output in its node's log",
		show("#logs?node="+c.Node(1).ID),
		waitFor(fmt.Sprintf(`document.getElementById("log-text").textContent.includes(%q)`, "on node "+c.Node(1).ID)),
		shoot("logs"))

	// The charts are live: a new object on node 2 (the job's last task)
	// raises its line above its lowest point. (Not above its first point:
	// the job's earlier objects on node 2 may be freed between the
	// chart's first sample and this one.)
	// Half a CPU: the job's detached placement group holds half of one
	// node's only CPU, and that node may be node 2 (a whole-CPU task
	// pinned there is unschedulable). Get, not only Wait: a task that
	// failed is ready too, and then no blob is stored.
	more := blob.Remote(jobCtx, atoll.Value(blobBytes), atoll.OnNode(c.Node(2).ID, false), atoll.WithTaskResources(atoll.Resources{CPU: 0.5}))
	defer more.Release()
	if v, err := atoll.Get(jobCtx, more); err != nil || len(v) != blobBytes {
		t.Fatalf("one more blob on node 2: %d bytes, %v", len(v), err)
	}
	do("the overview's store chart: node 2's line rises",
		show("#overview"),
		waitFor(fmt.Sprintf(`(() => {
			const l = [...document.querySelectorAll('#chart-store polyline')].find(p => p.dataset.series === %q);
			if (!l) return false;
			const pts = l.points;
			let low = -Infinity; // the line's lowest point (SVG y grows downwards)
			for (let i = 0; i < pts.numberOfItems; i++) low = Math.max(low, pts.getItem(i).y);
			return pts.getItem(pts.numberOfItems - 1).y < low; })()`, c.Node(2).ID[:8])))

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page reported errors on its console:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("screenshots in %s", shots)
}
