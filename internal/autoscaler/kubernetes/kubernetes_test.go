package kubernetes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/atoll-runtime/atoll/internal/autoscaler"
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

// TestManifestsDecodeStrictly decodes every manifest into the Kubernetes
// API's Go types, refusing unknown and duplicated fields, and checks that
// they fit together: the head's service account is the one the Role is
// bound to, the Service selects the head's pods and names its ports, the
// cluster file in the ConfigMap parses and names this provider, and the
// worker pod template is the built-in one.
func TestManifestsDecodeStrictly(t *testing.T) {
	var kinds []string
	var sa *corev1.ServiceAccount
	var role *rbacv1.Role
	var binding *rbacv1.RoleBinding
	var dep *appsv1.Deployment
	var svc *corev1.Service
	var cm *corev1.ConfigMap
	for file, docs := range manifests(t) {
		for i, doc := range docs {
			obj, err := DecodeStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s, document %d: %v", file, i, err)
			}
			switch o := obj.(type) {
			case *corev1.ServiceAccount:
				sa = o
			case *rbacv1.Role:
				role = o
			case *rbacv1.RoleBinding:
				binding = o
			case *appsv1.Deployment:
				dep = o
			case *corev1.Service:
				svc = o
			case *corev1.ConfigMap:
				cm = o
			case *corev1.Pod:
				if strings.TrimSpace(doc) != strings.TrimSpace(DefaultWorkerPod) {
					t.Errorf("%s differs from the built-in worker pod template (internal/autoscaler/kubernetes/worker-pod.yaml)", file)
				}
			default:
				t.Errorf("%s, document %d: unexpected %T", file, i, obj)
			}
			kinds = append(kinds, fmt.Sprintf("%T", obj))
		}
	}
	if sa == nil || role == nil || binding == nil || dep == nil || svc == nil || cm == nil {
		t.Fatalf("manifests hold %v; want a ServiceAccount, Role, RoleBinding, Deployment, Service, ConfigMap and Pod", kinds)
	}
	if dep.Spec.Template.Spec.ServiceAccountName != sa.Name || binding.Subjects[0].Name != sa.Name || binding.RoleRef.Name != role.Name {
		t.Errorf("the head runs as %q; the binding binds %q to %q; the role is %q", dep.Spec.Template.Spec.ServiceAccountName,
			binding.Subjects[0].Name, binding.RoleRef.Name, role.Name)
	}
	for _, verb := range []string{"create", "delete", "list"} {
		if !slices.Contains(role.Rules[0].Verbs, verb) || !slices.Contains(role.Rules[0].Resources, "pods") {
			t.Errorf("the role lacks %s on pods: %+v", verb, role.Rules)
		}
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, the head's pods have %q", k, v, dep.Spec.Template.Labels[k])
		}
	}
	if svc.Name != "atoll-head" || svc.Spec.Ports[0].Port != DefaultHeadPort {
		t.Errorf("the Service is %s:%d, the provider's default head address atoll-head.<namespace>.svc:%d", svc.Name, svc.Spec.Ports[0].Port, DefaultHeadPort)
	}
	file, err := autoscaler.ParseClusterFile(strings.NewReader(cm.Data["cluster.yaml"]))
	if err != nil || file.Provider.Type != "kubernetes" {
		t.Fatalf("the ConfigMap's cluster file: %v (provider %+v)", err, file)
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	if len(args) < 2 || args[0] != "up" || args[1] != "/etc/atoll/cluster.yaml" {
		t.Errorf("the head runs %q, want atoll up on the mounted cluster file", args)
	}
	// A manifest with a field the API does not have is refused.
	if _, err := DecodeStrict([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containerz: []}\n")); err == nil {
		t.Error("an unknown field decoded without an error")
	}
}

// TestProviderPods runs the provider against client-go's fake clientset:
// a launch creates the instance's pod from the template (name, labels,
// the node's flags and variables, a CPU request), Instances lists the
// cluster's pods with their types, a termination deletes the pod, and
// terminating one already gone is no error.
func TestProviderPods(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
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
	typ := file.NodeTypes["cpu4"]
	cfg := nodeconfig.Config{NodeType: "cpu4", InstanceID: "kt-cpu4-0a1b2c3d", NumCPUs: 4, Resources: map[string]float64{"GPU": 1},
		ObjectStoreMemory: 1 << 30}
	if err := p.Launch(ctx, typ, cfg); err != nil {
		t.Fatal(err)
	}
	// Pods of another cluster, or not the provider's, are not its.
	for _, other := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns1", Labels: map[string]string{LabelCluster: "elsewhere", LabelManagedBy: managedBy}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "byhand", Namespace: "ns1", Labels: map[string]string{LabelCluster: "kt"}}},
	} {
		if _, err := client.CoreV1().Pods("ns1").Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod, err := client.CoreV1().Pods("ns1").Get(ctx, cfg.InstanceID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if pod.Labels[LabelCluster] != "kt" || pod.Labels[LabelNodeType] != "cpu4" || pod.Labels[LabelManagedBy] != managedBy || c.Image != "registry.example/atoll:v1" {
		t.Errorf("pod labels %v, image %s", pod.Labels, c.Image)
	}
	wantArgs := []string{"start", "--block", "--node-ip=$(POD_IP)", "--address=atoll-head.ns1.svc:6380", "--num-cpus=4", `--resources={"GPU":1}`, "--object-store-memory=1073741824"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env[nodeconfig.EnvNodeType] != "cpu4" || env[nodeconfig.EnvInstanceID] != cfg.InstanceID {
		t.Errorf("env %v", env)
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.MilliValue() != 4000 {
		t.Errorf("CPU request %v, want 4", q.String())
	}
	got, err := p.Instances(ctx)
	if err != nil || len(got) != 1 || got[cfg.InstanceID] != "cpu4" {
		t.Fatalf("instances %v %v", got, err)
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
}

// TestProviderTemplate: a cluster file's worker_pod_template (relative to
// the file) replaces the built-in one; a template with an unknown field,
// or not a Pod, is refused.
func TestProviderTemplate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - {name: a, image: mine:1, args: [start, --block]}\n")
	write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containerz: []\n")
	write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: w}\n")
	for name, ok := range map[string]bool{"good.yaml": true, "bad.yaml": false, "svc.yaml": false} {
		file := &autoscaler.ClusterFile{ClusterName: "kt", Dir: dir, Provider: autoscaler.ProviderConfig{Type: "kubernetes", Namespace: "n", WorkerPodTemplate: name}}
		p, err := New(fake.NewClientset(), autoscaler.ProviderEnv{File: file})
		if (err == nil) != ok {
			t.Errorf("%s: %v", name, err)
		}
		if ok && p.template.Spec.Containers[0].Image != "mine:1" {
			t.Errorf("%s: image %s", name, p.template.Spec.Containers[0].Image)
		}
	}
}
