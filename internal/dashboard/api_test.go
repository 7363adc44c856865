package dashboard_test

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// The API's JSON, as a client reads it (the field names are the API's).
type (
	apiCluster struct {
		Address string `json:"address"`
		Nodes   []struct {
			NodeID             string             `json:"node_id"`
			Role               string             `json:"role"`
			State              string             `json:"state"`
			Reporting          bool               `json:"reporting"`
			StartTime          *time.Time         `json:"start_time"`
			ResourcesTotal     map[string]float64 `json:"resources_total"`
			StoreCapacityBytes uint64             `json:"store_capacity_bytes"`
			StoreUsedBytes     uint64             `json:"store_used_bytes"`
		} `json:"nodes"`
		Totals  apiTotals `json:"totals"`
		Drivers apiTotals `json:"drivers"`
	}
	apiTotals struct {
		NodesAlive         int                `json:"nodes_alive"`
		ResourcesTotal     map[string]float64 `json:"resources_total"`
		StoreCapacityBytes uint64             `json:"store_capacity_bytes"`
		StoreUsedBytes     uint64             `json:"store_used_bytes"`
		Objects            uint64             `json:"objects"`
		SpilledBytesTotal  uint64             `json:"spilled_bytes_total"`
	}
	apiJobs struct {
		Jobs []struct {
			JobID         string `json:"job_id"`
			Status        string `json:"status"`
			Entrypoint    string `json:"entrypoint"`
			TasksFinished int    `json:"tasks_finished"`
			TasksFailed   int    `json:"tasks_failed"`
		} `json:"jobs"`
	}
	apiTask struct {
		TaskID   string `json:"task_id"`
		Name     string `json:"name"`
		State    string `json:"state"`
		JobID    string `json:"job_id"`
		NodeID   string `json:"node_id"`
		WorkerID string `json:"worker_id"`
		TraceID  string `json:"trace_id"`
		TraceURL string `json:"trace_url"`
		Error    string `json:"error"`
		Stack    string `json:"remote_stack"`
	}
	apiTasks struct {
		Counts struct {
			Queued   int `json:"queued"`
			Running  int `json:"running"`
			Finished int `json:"finished"`
			Failed   int `json:"failed"`
		} `json:"counts"`
		Matching  int       `json:"matching"`
		Truncated bool      `json:"truncated"`
		Tasks     []apiTask `json:"tasks"`
	}
	apiActors struct {
		Counts map[string]int `json:"counts"`
		Actors []struct {
			ActorID     string `json:"actor_id"`
			Name        string `json:"name"`
			Class       string `json:"class"`
			State       string `json:"state"`
			NumRestarts int    `json:"num_restarts"`
			NodeID      string `json:"node_id"`
			JobID       string `json:"job_id"`
			DeathCause  *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"death_cause"`
		} `json:"actors"`
	}
	apiTimeline struct {
		StartUs int64 `json:"start_us"`
		EndUs   int64 `json:"end_us"`
		Events  []struct {
			NodeID   string `json:"node_id"`
			WorkerID string `json:"worker_id"`
			TaskID   string `json:"task_id"`
			Name     string `json:"name"`
			StartUs  int64  `json:"start_us"`
			EndUs    int64  `json:"end_us"`
			Failed   bool   `json:"failed"`
		} `json:"events"`
	}
	apiLog struct {
		NodeID    string `json:"node_id"`
		File      string `json:"file"`
		SizeBytes uint64 `json:"size_bytes"`
		Truncated bool   `json:"truncated"`
		Text      string `json:"text"`
	}
	apiError struct {
		Error string `json:"error"`
	}
)

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// checkAPI reads every endpoint after the job ran and checks what it
// says against what the test did; then bad requests.
func checkAPI(t *testing.T, c *testcluster.Cluster) {
	base := c.DashboardURL()

	// The overview: the 3 nodes (and the driver's), all alive and
	// reporting, with their resources and store.
	var cl apiCluster
	getJSON(t, base+"/api/cluster", http.StatusOK, &cl)
	if cl.Address != c.Address() {
		t.Errorf("address %q, want %q", cl.Address, c.Address())
	}
	roles := map[string]int{}
	for _, n := range cl.Nodes {
		roles[n.Role]++
		if !hexID.MatchString(n.NodeID) || n.State != "alive" || !n.Reporting || n.StartTime == nil {
			t.Errorf("node %+v: want a hex id, alive, reporting, a start time", n)
		}
		if n.Role != "driver" && (n.ResourcesTotal["CPU"] != 1 || n.StoreCapacityBytes != 64<<20) {
			t.Errorf("node %s: CPU %v, store %d; want 1 and 64 MiB", n.NodeID, n.ResourcesTotal["CPU"], n.StoreCapacityBytes)
		}
	}
	if roles["head"] != 1 || roles["worker"] != 2 || roles["driver"] != 1 || cl.Nodes[0].NodeID != c.Node(0).ID {
		t.Errorf("roles %v, first node %s; want the head (%s) first, 2 workers and the driver's node", roles, cl.Nodes[0].NodeID, c.Node(0).ID)
	}
	// The cluster's capacity is its nodes'; the driver's store apart.
	if cl.Totals.NodesAlive != 3 || cl.Totals.ResourcesTotal["CPU"] != 3 || cl.Totals.StoreCapacityBytes != 3*(64<<20) {
		t.Errorf("totals %+v, want the 3 nodes, 3 CPUs, 3 stores of 64 MiB", cl.Totals)
	}
	if cl.Drivers.NodesAlive != 1 || cl.Drivers.StoreCapacityBytes != driverStore {
		t.Errorf("drivers %+v, want the driver's node and its store", cl.Drivers)
	}
	// The job's objects: the blobs in the nodes' stores, the puts past
	// the driver's store spilled.
	testutil.EventuallyWithin(t, 30*time.Second, "the nodes to report the job's objects", func() bool {
		getJSON(t, base+"/api/cluster", http.StatusOK, &cl)
		return cl.Totals.StoreUsedBytes >= numBlobs*blobBytes && cl.Drivers.SpilledBytesTotal > 0 && cl.Totals.Objects >= numBlobs
	})
	for _, n := range cl.Nodes {
		if n.Role != "driver" && n.StoreUsedBytes < blobBytes {
			t.Errorf("node %s (%s) uses %d bytes of its store, want a blob's %d at least", n.NodeID, n.Role, n.StoreUsedBytes, blobBytes)
		}
	}

	// Jobs: the driver's, running, with its tasks.
	var jobs apiJobs
	getJSON(t, base+"/api/jobs", http.StatusOK, &jobs)
	if len(jobs.Jobs) != 1 {
		t.Fatalf("jobs %+v, want the driver's", jobs.Jobs)
	}
	job := jobs.Jobs[0]
	if !hexID.MatchString(job.JobID) || job.Status != "running" || job.TasksFinished != numFinished || job.TasksFailed != numFails ||
		!strings.Contains(job.Entrypoint, "dashboard.test") {
		t.Errorf("job %+v: want running, %d tasks finished and %d failed, the test binary as entrypoint", job, numFinished, numFails)
	}

	// Tasks: every attempt of the job, newest first, with a trace.
	var tasks apiTasks
	getJSON(t, base+"/api/tasks?job="+job.JobID, http.StatusOK, &tasks)
	if tasks.Counts.Finished != numFinished || tasks.Counts.Failed != numFails || tasks.Matching != numAttempts ||
		len(tasks.Tasks) != numAttempts || tasks.Truncated {
		t.Errorf("tasks of the job: counts %+v, %d matching, %d listed", tasks.Counts, tasks.Matching, len(tasks.Tasks))
	}
	nodesRun := map[string]bool{}
	for _, task := range tasks.Tasks {
		wantState := map[string]string{"dash.square": "finished", "dash.blob": "finished", "dash.fail": "failed"}[task.Name]
		if task.State != wantState || task.JobID != job.JobID || !hexID.MatchString(task.TaskID) || !hexID.MatchString(task.WorkerID) {
			t.Errorf("task %+v", task)
		}
		if !hexID.MatchString(task.TraceID) || task.TraceURL != "http://traces.example/trace/"+task.TraceID {
			t.Errorf("task %s: trace id %q, link %q", task.TaskID, task.TraceID, task.TraceURL)
		}
		nodesRun[task.NodeID] = true
	}
	if len(nodesRun) != 3 {
		t.Errorf("the job's tasks ran on %d nodes, want 3 (Spread)", len(nodesRun))
	}
	// Filters and the limit.
	var failed apiTasks
	getJSON(t, base+"/api/tasks?state=failed&job="+job.JobID, http.StatusOK, &failed)
	if len(failed.Tasks) != numFails || failed.Tasks[0].Name != "dash.fail" {
		t.Errorf("failed tasks %+v", failed.Tasks)
	}
	// A failed attempt says why, with the stack of its goroutine.
	for _, task := range failed.Tasks {
		if !strings.Contains(task.Error, "dash.fail refuses 7") || !strings.Contains(task.Stack, "goroutine") {
			t.Errorf("failed task %s: error %q, stack %q; want its error and its stack", task.TaskID, task.Error, task.Stack)
		}
	}
	var named apiTasks
	getJSON(t, base+"/api/tasks?name=square&node="+c.Node(1).ID, http.StatusOK, &named)
	for _, task := range named.Tasks {
		if task.Name != "dash.square" || task.NodeID != c.Node(1).ID {
			t.Errorf("name=square&node=%s gave %+v", c.Node(1).ID, task)
		}
	}
	if len(named.Tasks) == 0 {
		t.Errorf("no square on node 1")
	}
	var two apiTasks
	getJSON(t, base+"/api/tasks?limit=2", http.StatusOK, &two)
	if len(two.Tasks) != 2 || !two.Truncated || two.Matching != numAttempts {
		t.Errorf("limit=2: %d tasks, truncated %v, %d matching", len(two.Tasks), two.Truncated, two.Matching)
	}

	// Actors: the counter, alive, on a node of the cluster, in the job.
	// The killed one, dead with its cause, after it (the GCS learns of
	// the death asynchronously).
	var actors apiActors
	testutil.EventuallyWithin(t, 30*time.Second, "the killed actor to be dead", func() bool {
		getJSON(t, base+"/api/actors", http.StatusOK, &actors)
		return actors.Counts["dead"] == 1
	})
	if len(actors.Actors) != 2 || actors.Counts["alive"] != 1 {
		t.Fatalf("actors %+v", actors)
	}
	a, dead := actors.Actors[0], actors.Actors[1]
	if a.Class != "dash.counter" || a.Name != "dash-counter" || a.State != "alive" || a.JobID != job.JobID || a.DeathCause != nil ||
		!slices.Contains([]string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}, a.NodeID) {
		t.Errorf("actor %+v", a)
	}
	if dead.Name != "dash-victim" || dead.State != "dead" || dead.DeathCause == nil || dead.DeathCause.Code != "actor_died" ||
		dead.DeathCause.Message == "" {
		t.Errorf("killed actor %+v (cause %+v)", dead, dead.DeathCause)
	}
	var alive apiActors
	getJSON(t, base+"/api/actors?state=alive", http.StatusOK, &alive)
	if len(alive.Actors) != 1 || alive.Actors[0].ActorID != a.ActorID {
		t.Errorf("state=alive: %+v", alive.Actors)
	}

	// Placement groups: the job's detached one, created on a node.
	var groups struct {
		Counts map[string]int `json:"counts"`
		Groups []struct {
			Name        string   `json:"name"`
			State       string   `json:"state"`
			Strategy    string   `json:"strategy"`
			BundleNodes []string `json:"bundle_nodes"`
		} `json:"groups"`
	}
	getJSON(t, base+"/api/placement-groups", http.StatusOK, &groups)
	if len(groups.Groups) != 1 || groups.Counts["created"] != 1 || groups.Groups[0].Name != "dash-group" || groups.Groups[0].Strategy != "PACK" ||
		len(groups.Groups[0].BundleNodes) != 1 || !slices.Contains([]string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}, groups.Groups[0].BundleNodes[0]) {
		t.Errorf("placement groups %+v", groups)
	}

	// The timeline: the job's attempts, oldest first, within its span.
	var tl apiTimeline
	getJSON(t, base+"/api/timeline?job="+job.JobID, http.StatusOK, &tl)
	if len(tl.Events) != numAttempts {
		t.Errorf("timeline: %d events, want %d", len(tl.Events), numAttempts)
	}
	for i, e := range tl.Events {
		if e.StartUs < tl.StartUs || e.EndUs > tl.EndUs || e.EndUs < e.StartUs || (i > 0 && e.StartUs < tl.Events[i-1].StartUs) ||
			e.Failed != (e.Name == "dash.fail") {
			t.Errorf("timeline event %d %+v (span %d-%d)", i, e, tl.StartUs, tl.EndUs)
		}
	}

	// Logs: each node's own file, its end.
	for i := range 3 {
		n := c.Node(i)
		var l apiLog
		getJSON(t, base+"/api/logs/"+n.ID+"?bytes=4096", http.StatusOK, &l)
		if l.NodeID != n.ID || l.File != n.LogFile || l.SizeBytes == 0 || len(l.Text) == 0 || len(l.Text) > 4096 {
			t.Errorf("log of node %d: %+v", i, l)
		}
	}
	// Worker output lands in the node's log.
	testutil.EventuallyWithin(t, 30*time.Second, "a square's output in node 1's log", func() bool {
		var l apiLog
		getJSON(t, base+"/api/logs/"+c.Node(1).ID, http.StatusOK, &l)
		return strings.Contains(l.Text, "on node "+c.Node(1).ID)
	})
	var headLog apiLog
	getJSON(t, base+"/api/logs/"+c.Node(0).ID, http.StatusOK, &headLog)
	if !strings.Contains(headLog.Text, base) {
		t.Errorf("the head's log does not say where the dashboard is (%s): %q", base, headLog.Text)
	}

	checkAccess(t, base)

	// Bad requests: typed errors, no crash.
	for _, bad := range []struct {
		path string
		code int
	}{
		{"/api/tasks?job=zz", http.StatusBadRequest},
		{"/api/tasks?state=lost", http.StatusBadRequest},
		{"/api/tasks?limit=0", http.StatusBadRequest},
		{"/api/tasks?limit=99999999999999999999", http.StatusBadRequest},
		{"/api/tasks?name=" + strings.Repeat("x", 300), http.StatusBadRequest},
		{"/api/actors?state=asleep", http.StatusBadRequest},
		{"/api/logs/nothex", http.StatusBadRequest},
		{"/api/logs/" + strings.Repeat("0", 32), http.StatusBadRequest},
		{"/api/logs/" + strings.Repeat("ab", 16), http.StatusNotFound},
		{"/api/nothing", http.StatusNotFound},
	} {
		var e apiError
		getJSON(t, base+bad.path, bad.code, &e)
		if e.Error == "" || strings.HasPrefix(e.Error, "atoll: ") {
			t.Errorf("%s: error %q", bad.path, e.Error)
		}
	}
	resp, err := http.Post(base+"/api/cluster", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/cluster: %d, want 405", resp.StatusCode)
	}
}

// checkAccess: the dashboard answers only to the names it serves; its
// logs need the reader token, as a bearer or as the session a login
// (from its own page) sets.
func checkAccess(t *testing.T, base string) {
	t.Helper()
	do := func(method, path string, header map[string]string, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	logs := "/api/logs/" + strings.Repeat("ab", 16)
	for _, tc := range []struct {
		what         string
		method, path string
		header       map[string]string
		body         string
		want         int
	}{
		{"another site's name (DNS rebinding)", "GET", "/api/cluster", map[string]string{"Host": "attacker.example"}, "", http.StatusMisdirectedRequest},
		{"another site's name, the page", "GET", "/", map[string]string{"Host": "attacker.example:8265"}, "", http.StatusMisdirectedRequest},
		{"localhost", "GET", "/api/cluster", map[string]string{"Host": "localhost"}, "", http.StatusOK},
		{"the logs without the token", "GET", logs, nil, "", http.StatusUnauthorized},
		{"the logs with another token", "GET", logs, map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
		{"a login with another token", "POST", "/api/login", nil, `{"token": "nope"}`, http.StatusUnauthorized},
		{"a login from another site's page", "POST", "/api/login", map[string]string{"Origin": "http://attacker.example"}, `{"token": "` + readerToken + `"}`, http.StatusForbidden},
	} {
		if resp := do(tc.method, tc.path, tc.header, tc.body); resp.StatusCode != tc.want {
			t.Errorf("%s: %s %s: status %d, want %d", tc.what, tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	resp := do("POST", "/api/login", map[string]string{"Origin": base}, `{"token": "`+readerToken+`"}`)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "atoll_session" {
			session = c
		}
	}
	if resp.StatusCode != http.StatusNoContent || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Value == readerToken {
		t.Fatalf("login: status %d, cookie %+v; want 204 and an HttpOnly, SameSite=Strict session that is not the token", resp.StatusCode, session)
	}
	// 404: the node is unknown, but the session got past the login.
	if resp := do("GET", logs, map[string]string{"Cookie": "atoll_session=" + session.Value}, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the logs with the session: status %d, want 404 (an unknown node)", resp.StatusCode)
	}
}
