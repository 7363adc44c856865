package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll/internal/autoscaler"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// manifests reads deploy/kubernetes's files, each split into its
// documents.
func manifests(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../../../deploy/kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			out[filepath.Base(f)] = append(out[filepath.Base(f)], doc)
		}
	}
	return out
}

// at follows path (map keys, or list indices as numbers) into o; nil
// where it leads nowhere.
func at(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := o.(map[string]any)
			o = m[k]
		case int:
			l, _ := o.([]any)
			if k >= len(l) {
				return nil
			}
			o = l[k]
		}
	}
	return o
}

// str is at's string, "" if it is none.
func str(o any, path ...any) string {
	s, _ := at(o, path...).(string)
	return s
}

// TestManifestsFitTogether decodes every manifest and checks that they
// fit together: the head's service account is the one the Role is bound
// to, the Role may create, delete and list pods, the Service selects the
// head's pods and names its port, the cluster file in the ConfigMap
// parses and names this provider, the head runs `atoll up` on it, and the
// worker pod template is the built-in one.
func TestManifestsFitTogether(t *testing.T) {
	byKind := map[string]Object{}
	for file, docs := range manifests(t) {
		for i, doc := range docs {
			obj, err := DecodeManifest([]byte(doc))
			if err != nil {
				t.Fatalf("%s, document %d: %v", file, i, err)
			}
			kind := fmt.Sprintf("%s/%s", obj["apiVersion"], obj["kind"])
			switch kind {
			case "v1/ServiceAccount", "rbac.authorization.k8s.io/v1/Role", "rbac.authorization.k8s.io/v1/RoleBinding",
				"apps/v1/Deployment", "v1/Service", "v1/ConfigMap":
			case "v1/Pod":
				if strings.TrimSpace(doc) != strings.TrimSpace(DefaultWorkerPod) {
					t.Errorf("%s differs from the built-in worker pod template (internal/autoscaler/kubernetes/worker-pod.yaml)", file)
				}
				if _, err := DecodePod([]byte(doc)); err != nil {
					t.Errorf("%s: %v", file, err)
				}
			default:
				t.Errorf("%s, document %d: unexpected %s", file, i, kind)
			}
			if byKind[kind] != nil {
				t.Errorf("%s, document %d: a second %s", file, i, kind)
			}
			byKind[kind] = obj
		}
	}
	sa, role, binding := byKind["v1/ServiceAccount"], byKind["rbac.authorization.k8s.io/v1/Role"], byKind["rbac.authorization.k8s.io/v1/RoleBinding"]
	dep, svc, cm := byKind["apps/v1/Deployment"], byKind["v1/Service"], byKind["v1/ConfigMap"]
	if sa == nil || role == nil || binding == nil || dep == nil || svc == nil || cm == nil || byKind["v1/Pod"] == nil {
		t.Fatalf("manifests hold %v; want a ServiceAccount, Role, RoleBinding, Deployment, Service, ConfigMap and Pod", slices.Sorted(maps.Keys(byKind)))
	}
	podSpec := at(dep, "spec", "template", "spec")
	if str(podSpec, "serviceAccountName") != str(sa, "metadata", "name") || str(binding, "subjects", 0, "name") != str(sa, "metadata", "name") ||
		str(binding, "roleRef", "name") != str(role, "metadata", "name") {
		t.Errorf("the head runs as %q; the binding binds %q to %q; the role is %q", str(podSpec, "serviceAccountName"),
			str(binding, "subjects", 0, "name"), str(binding, "roleRef", "name"), str(role, "metadata", "name"))
	}
	verbs, _ := at(role, "rules", 0, "verbs").([]any)
	resources, _ := at(role, "rules", 0, "resources").([]any)
	for _, verb := range []string{"create", "delete", "list"} {
		if !slices.Contains(verbs, any(verb)) || !slices.Contains(resources, any("pods")) {
			t.Errorf("the role lacks %s on pods: %v", verb, at(role, "rules"))
		}
	}
	sel, _ := at(svc, "spec", "selector").(map[string]any)
	if len(sel) == 0 {
		t.Error("the Service selects nothing")
	}
	for k, v := range sel {
		if got := at(dep, "spec", "template", "metadata", "labels", k); got != v {
			t.Errorf("the Service selects %s=%v, the head's pods have %v", k, v, got)
		}
	}
	if port, _ := at(svc, "spec", "ports", 0, "port").(float64); str(svc, "metadata", "name") != "atoll-head" || port != DefaultHeadPort {
		t.Errorf("the Service is %s:%v, the provider's default head address atoll-head.<namespace>.svc:%d", str(svc, "metadata", "name"), port, DefaultHeadPort)
	}
	file, err := autoscaler.ParseClusterFile(strings.NewReader(str(cm, "data", "cluster.yaml")))
	if err != nil || file.Provider.Type != "kubernetes" {
		t.Fatalf("the ConfigMap's cluster file: %v (provider %+v)", err, file)
	}
	args, _ := at(podSpec, "containers", 0, "args").([]any)
	if len(args) < 2 || args[0] != "up" || args[1] != "/etc/atoll/cluster.yaml" {
		t.Errorf("the head runs %q, want atoll up on the mounted cluster file", args)
	}
	// A manifest with a duplicated key, two documents, or no kind is refused.
	for _, bad := range []string{
		"apiVersion: v1\nkind: Pod\nkind: Pod\n",
		"apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\n",
		"apiVersion: v1\nmetadata: {name: x}\n",
	} {
		if _, err := DecodeManifest([]byte(bad)); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("%q: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// apiServer is an API server of pods for the tests: HTTPS, one bearer
// token, pods in memory, label selectors of k=v pairs, and strict
// decoding of a created pod against the fields it knows (enough for
// the templates here: any other is refused as the API server refuses
// an unknown field).
type apiServer struct {
	*httptest.Server
	token string
	mu    sync.Mutex
	pods  map[string]Object // namespace/name
	calls []string          // method path?query, in order
}

var knownPodFields = map[string][]string{
	"":         {"apiVersion", "kind", "metadata", "spec", "status"},
	"metadata": {"name", "namespace", "labels", "annotations", "generateName", "deletionTimestamp"},
	"spec":     {"restartPolicy", "terminationGracePeriodSeconds", "containers", "serviceAccountName", "nodeSelector", "tolerations", "volumes"},
}

func newAPIServer(t *testing.T) (*apiServer, *Client) {
	s := &apiServer{token: "secret-token", pods: map[string]Object{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s, NewClient(s.URL, s.Client(), func() (string, error) { return "secret-token", nil })
}

func (s *apiServer) add(ns string, pod Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[ns+"/"+str(pod, "metadata", "name")] = pod
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (s *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") || len(parts) < 2 || parts[1] != "pods" || len(parts) > 3 {
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	ns := parts[0]
	switch {
	case r.Method == http.MethodPost && len(parts) == 2:
		var pod Object
		if err := json.NewDecoder(r.Body).Decode(&pod); err != nil {
			status(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		if r.URL.Query().Get("fieldValidation") != "Strict" {
			status(w, http.StatusBadRequest, "BadRequest", "the test's server wants fieldValidation=Strict")
			return
		}
		for prefix, known := range knownPodFields {
			m, _ := pod, true
			if prefix != "" {
				m, _ = pod[prefix].(map[string]any)
			}
			for k := range m {
				if !slices.Contains(known, k) {
					status(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf(`Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "%s"`, strings.TrimPrefix(prefix+"."+k, ".")))
					return
				}
			}
		}
		key := ns + "/" + str(pod, "metadata", "name")
		if _, ok := s.pods[key]; ok {
			status(w, http.StatusConflict, "AlreadyExists", fmt.Sprintf("pods %q already exists", str(pod, "metadata", "name")))
			return
		}
		if r.URL.Query().Get("dryRun") != "All" {
			s.pods[key] = pod
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(pod)
	case r.Method == http.MethodDelete && len(parts) == 3:
		if _, ok := s.pods[ns+"/"+parts[2]]; !ok {
			status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("pods %q not found", parts[2]))
			return
		}
		delete(s.pods, ns+"/"+parts[2])
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Success"})
	case r.Method == http.MethodGet && len(parts) == 2:
		var items []Object
		for key, pod := range s.pods {
			if !strings.HasPrefix(key, ns+"/") {
				continue
			}
			match := true
			for _, kv := range strings.Split(r.URL.Query().Get("labelSelector"), ",") {
				k, v, _ := strings.Cut(kv, "=")
				if kv != "" && at(pod, "metadata", "labels", k) != v {
					match = false
				}
			}
			if match {
				items = append(items, pod)
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "PodList", "apiVersion": "v1", "items": items})
	default:
		status(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
	}
}

// TestProviderPods runs the provider against the test's API server: a
// launch creates the instance's pod from the template (name, labels, the
// node's flags and variables, a CPU request), Instances lists the
// cluster's pods with their types (not another cluster's, not one being
// deleted or done), a termination deletes the pod, and terminating one
// already gone is no error.
func TestProviderPods(t *testing.T) {
	ctx := context.Background()
	srv, client := newAPIServer(t)
	file, err := autoscaler.ParseClusterFile(strings.NewReader(`
cluster_name: kt
provider: {type: kubernetes, namespace: ns1, image: registry.example/atoll:v1}
node_types:
  cpu4: {resources: {CPU: 4, GPU: 1}, max_workers: 2, object_store_memory: 1GiB}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(client, autoscaler.ProviderEnv{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckTemplate(ctx); err != nil {
		t.Fatalf("the built-in template: %v", err)
	}
	typ := file.NodeTypes["cpu4"]
	cfg := nodeconfig.Config{NodeType: "cpu4", InstanceID: "kt-cpu4-0a1b2c3d", NumCPUs: 4, Resources: map[string]float64{"GPU": 1},
		ObjectStoreMemory: 1 << 30}
	if err := p.Launch(ctx, typ, cfg); err != nil {
		t.Fatal(err)
	}
	// Pods of another cluster, or not the provider's, are not its; nor
	// are its pods being deleted or done.
	lbl := func(cluster, managed string) map[string]any {
		m := map[string]any{LabelCluster: cluster, LabelNodeType: "cpu4"}
		if managed != "" {
			m[LabelManagedBy] = managed
		}
		return m
	}
	srv.add("ns1", Object{"metadata": map[string]any{"name": "other", "labels": lbl("elsewhere", managedBy)}})
	srv.add("ns1", Object{"metadata": map[string]any{"name": "byhand", "labels": lbl("kt", "")}})
	srv.add("ns1", Object{"metadata": map[string]any{"name": "leaving", "labels": lbl("kt", managedBy), "deletionTimestamp": "2026-11-25T10:00:00Z"}})
	srv.add("ns1", Object{"metadata": map[string]any{"name": "done", "labels": lbl("kt", managedBy)}, "status": map[string]any{"phase": "Succeeded"}})
	srv.add("ns2", Object{"metadata": map[string]any{"name": "elsewhere", "labels": lbl("kt", managedBy)}})
	srv.mu.Lock()
	pod := srv.pods["ns1/"+cfg.InstanceID]
	srv.mu.Unlock()
	if pod == nil {
		t.Fatalf("no pod %s created", cfg.InstanceID)
	}
	c := at(pod, "spec", "containers", 0)
	if str(pod, "metadata", "labels", LabelCluster) != "kt" || str(pod, "metadata", "labels", LabelNodeType) != "cpu4" ||
		str(pod, "metadata", "labels", LabelManagedBy) != managedBy || str(c, "image") != "registry.example/atoll:v1" {
		t.Errorf("pod labels %v, image %s", at(pod, "metadata", "labels"), str(c, "image"))
	}
	var args []string
	for _, a := range at(c, "args").([]any) {
		args = append(args, a.(string))
	}
	wantArgs := []string{"start", "--block", "--node-ip=$(POD_IP)", "--address=atoll-head.ns1.svc:6380", "--num-cpus=4", `--resources={"GPU":1}`, "--object-store-memory=1073741824"}
	if !slices.Equal(args, wantArgs) {
		t.Errorf("args %q, want %q", args, wantArgs)
	}
	env := map[string]string{}
	for _, e := range at(c, "env").([]any) {
		env[str(e, "name")] = str(e, "value")
	}
	if env[nodeconfig.EnvNodeType] != "cpu4" || env[nodeconfig.EnvInstanceID] != cfg.InstanceID {
		t.Errorf("env %v", env)
	}
	if q := str(c, "resources", "requests", "cpu"); q != "4" {
		t.Errorf("CPU request %q, want 4", q)
	}
	got, err := p.Instances(ctx)
	if err != nil || len(got) != 1 || got[cfg.InstanceID] != "cpu4" {
		t.Fatalf("instances %v %v", got, err)
	}
	if err := p.Launch(ctx, typ, cfg); !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second launch of the instance: %v, want ErrUnavailable saying it exists", err)
	}
	if err := p.Terminate(ctx, cfg.InstanceID); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Instances(ctx); err != nil || len(got) != 0 {
		t.Fatalf("instances after the termination: %v %v", got, err)
	}
	if err := p.Terminate(ctx, cfg.InstanceID); err != nil {
		t.Errorf("terminating a pod already gone: %v", err)
	}
	if err := p.Launch(ctx, typ, nodeconfig.Config{NodeType: "cpu4"}); err == nil {
		t.Error("a launch without an instance id: no error")
	}
	// A fractional CPU is requested in thousandths.
	if pod, err := p.Pod(autoscaler.NodeTypeSpec{Resources: map[string]float64{"CPU": 0.5}}, nodeconfig.Config{InstanceID: "x"}); err != nil ||
		str(pod, "spec", "containers", 0, "resources", "requests", "cpu") != "500m" {
		t.Errorf("half a CPU: %v %v", at(pod, "spec", "containers", 0, "resources"), err)
	}
	// A wrong token is PermissionDenied, with the server's words.
	srv.mu.Lock()
	srv.token = "rotated"
	srv.mu.Unlock()
	if _, err := p.Instances(ctx); !errors.Is(err, errs.ErrPermissionDenied) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("with a stale token: %v", err)
	}
}

// TestProviderTemplate: a cluster file's worker_pod_template (relative to
// the file) replaces the built-in one; a template that is not a Pod, has
// no container or holds a duplicated key is refused when read, and one
// with a field the server's Pod lacks when the server checks it (a dry
// run, which creates nothing).
func TestProviderTemplate(t *testing.T) {
	ctx := context.Background()
	srv, client := newAPIServer(t)
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - {name: a, image: mine:1, args: [start, --block]}\n")
	write("typo.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: a, image: mine:1}]\n  restartPolicyy: Never\n")
	write("none.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containerz: []\n")
	write("dup.yaml", "apiVersion: v1\nkind: Pod\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: a}]\n")
	write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: w}\n")
	for name, want := range map[string]string{"good.yaml": "", "typo.yaml": `unknown field "spec.restartPolicyy"`,
		"none.yaml": "no container", "dup.yaml": "already defined", "svc.yaml": "want a v1 Pod"} {
		file := &autoscaler.ClusterFile{ClusterName: "kt", Dir: dir, Provider: autoscaler.ProviderConfig{Type: "kubernetes", Namespace: "n", WorkerPodTemplate: name}}
		p, err := New(client, autoscaler.ProviderEnv{File: file})
		if err == nil {
			err = p.CheckTemplate(ctx)
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want == "" && str(p.template, "spec", "containers", 0, "image") != "mine:1":
			t.Errorf("%s: image %s", name, str(p.template, "spec", "containers", 0, "image"))
		case want != "" && (!errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want ErrInvalidArgument saying %q", name, err, want)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.pods) != 0 {
		t.Errorf("the dry runs created pods: %v", srv.pods)
	}
	if !slices.ContainsFunc(srv.calls, func(c string) bool {
		return strings.HasPrefix(c, "POST /api/v1/namespaces/n/pods?") && strings.Contains(c, "dryRun=All") && strings.Contains(c, "fieldValidation=Strict")
	}) {
		t.Errorf("no strict dry run among the calls %q", srv.calls)
	}
}

// TestInClusterClient: outside a pod (no API server in the environment)
// the provider cannot start, and says why.
func TestInClusterClient(t *testing.T) {
	t.Setenv(envServiceHost, "")
	if _, err := InClusterClient(); !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "not in a pod") {
		t.Errorf("outside a pod: %v", err)
	}
}
