// Package kubernetes is the autoscaler's Kubernetes node provider: each
// instance is a worker pod, created and deleted through the API server's
// REST API from a pod template (deploy/kubernetes/worker-pod.yaml, or the
// cluster file's provider.worker_pod_template). The pod runs `atoll
// start` joining the head's Service; its node reports its node type and
// its pod's name, which is how the autoscaler links the two. It
// registers itself as provider "kubernetes".
//
// The provider sends pods for the server to decode strictly (an unknown
// or duplicated field is refused), and checks its template that way when
// it starts, with a dry run. Its tests run it against an API server of
// their own over HTTPS (pods created, listed and deleted in memory):
// no Kubernetes cluster runs where they do.
package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	_ "embed"

	"go.yaml.in/yaml/v3"

	"github.com/atoll-runtime/atoll/internal/autoscaler"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func init() {
	autoscaler.RegisterProvider("kubernetes", func(env autoscaler.ProviderEnv) (autoscaler.NodeProvider, error) {
		client, err := InClusterClient()
		if err != nil {
			return nil, err
		}
		p, err := New(client, env)
		if err != nil {
			return nil, err
		}
		// The template as the server sees it: a typo'd field fails the
		// head's start, not each launch.
		if err := p.CheckTemplate(context.Background()); err != nil {
			return nil, err
		}
		return p, nil
	})
}

// DefaultWorkerPod is the worker pod template used when the cluster file
// names none (deploy/kubernetes/worker-pod.yaml is the same file).
//
//go:embed worker-pod.yaml
var DefaultWorkerPod string

// Labels of the pods the provider creates.
const (
	LabelCluster   = "atoll.io/cluster"
	LabelNodeType  = "atoll.io/node-type"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "atoll-autoscaler"
	// DefaultHeadPort is the head Service's NATS port in the manifests.
	DefaultHeadPort = 6380
	// namespaceFile is where a pod's service account names its namespace.
	namespaceFile = serviceAccountDir + "/namespace"
)

// Object is a Kubernetes object as its JSON decodes: maps, slices,
// strings, numbers and booleans.
type Object = map[string]any

// Provider creates and deletes worker pods.
type Provider struct {
	client    *Client
	namespace string
	cluster   string
	head      string
	template  Object
}

// New returns a provider using client, configured by env's cluster file:
// the namespace (default the head pod's own, else "default"), the pod
// template (default the built-in one, DefaultWorkerPod), the head address
// the workers join (default atoll-head.<namespace>.svc:6380).
func New(client *Client, env autoscaler.ProviderEnv) (*Provider, error) {
	pc := env.File.Provider
	ns := pc.Namespace
	if ns == "" {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			ns = string(bytes.TrimSpace(b))
		}
	}
	if ns == "" {
		ns = "default"
	}
	tmpl := []byte(DefaultWorkerPod)
	if pc.WorkerPodTemplate != "" {
		path := pc.WorkerPodTemplate
		if !filepath.IsAbs(path) {
			path = filepath.Join(env.File.Dir, path)
		}
		var err error
		if tmpl, err = os.ReadFile(path); err != nil {
			return nil, errs.Invalidf("kubernetes provider: worker_pod_template: %v", err)
		}
	}
	pod, err := DecodePod(tmpl)
	if err != nil {
		return nil, err
	}
	if pc.Image != "" {
		firstContainer(pod)["image"] = pc.Image
	}
	head := pc.HeadAddress
	if head == "" {
		head = fmt.Sprintf("atoll-head.%s.svc:%d", ns, DefaultHeadPort)
	}
	cluster := env.File.ClusterName
	if cluster == "" {
		cluster = "atoll"
	}
	return &Provider{client: client, namespace: ns, cluster: cluster, head: head, template: pod}, nil
}

// DecodeManifest decodes one Kubernetes manifest (YAML or JSON: one
// document, an object with apiVersion and kind); a duplicated key is
// ErrInvalidArgument. Which fields the object's kind has is the API
// server's to check: the provider sends its pods for strict decoding.
func DecodeManifest(b []byte) (Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var obj Object
	if err := dec.Decode(&obj); err != nil {
		return nil, errs.Invalidf("kubernetes manifest: %v", err)
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, errs.Invalidf("kubernetes manifest: more than one document")
	}
	// Through JSON, so that nested maps and numbers are what a decoded
	// API answer holds.
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, errs.Invalidf("kubernetes manifest: %v", err)
	}
	obj = nil
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, errs.Invalidf("kubernetes manifest: %v", err)
	}
	if s, _ := obj["apiVersion"].(string); s == "" {
		return nil, errs.Invalidf("kubernetes manifest: no apiVersion")
	}
	if s, _ := obj["kind"].(string); s == "" {
		return nil, errs.Invalidf("kubernetes manifest: no kind")
	}
	return obj, nil
}

// DecodePod decodes a Pod manifest (DecodeManifest) and checks what the
// provider relies on: a v1 Pod with at least one container, each a map.
func DecodePod(b []byte) (Object, error) {
	obj, err := DecodeManifest(b)
	if err != nil {
		return nil, err
	}
	if obj["apiVersion"] != "v1" || obj["kind"] != "Pod" {
		return nil, errs.Invalidf("kubernetes provider: the worker pod template is a %v %v, want a v1 Pod", obj["apiVersion"], obj["kind"])
	}
	spec, _ := obj["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	if len(containers) == 0 {
		return nil, errs.Invalidf("kubernetes provider: the worker pod template has no container (spec.containers)")
	}
	for i, c := range containers {
		if _, ok := c.(map[string]any); !ok {
			return nil, errs.Invalidf("kubernetes provider: the worker pod template's container %d is a %T, not an object", i, c)
		}
	}
	return obj, nil
}

// firstContainer returns the first container of a pod DecodePod checked.
func firstContainer(pod Object) map[string]any {
	return pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

// child returns m[key] as a map, making it if missing (or not a map).
func child(m map[string]any, key string) map[string]any {
	c, ok := m[key].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[key] = c
	}
	return c
}

// Pod is the pod of an instance: the template with the instance's name
// and labels, its first container given the node's settings (flags of
// `atoll start` after the template's own arguments, the node type and
// instance in the environment) and CPU requests of the node type.
func (p *Provider) Pod(typ autoscaler.NodeTypeSpec, cfg nodeconfig.Config) (Object, error) {
	pod, err := deepCopy(p.template)
	if err != nil {
		return nil, err
	}
	meta := child(pod, "metadata")
	meta["name"], meta["namespace"] = cfg.InstanceID, p.namespace
	delete(meta, "generateName")
	labels := child(meta, "labels")
	labels[LabelCluster], labels[LabelNodeType], labels[LabelManagedBy] = p.cluster, cfg.NodeType, managedBy
	c := firstContainer(pod)
	args := []string{"--address=" + p.head, "--num-cpus=" + strconv.FormatFloat(cfg.NumCPUs, 'g', -1, 64)}
	if len(cfg.Resources) > 0 {
		b, err := json.Marshal(cfg.Resources)
		if err != nil {
			return nil, err
		}
		args = append(args, "--resources="+string(b))
	}
	if cfg.ObjectStoreMemory > 0 {
		args = append(args, "--object-store-memory="+strconv.FormatUint(cfg.ObjectStoreMemory, 10))
	}
	old, _ := c["args"].([]any)
	for _, a := range args {
		old = append(old, a)
	}
	c["args"] = old
	env, _ := c["env"].([]any)
	c["env"] = append(env,
		map[string]any{"name": nodeconfig.EnvNodeType, "value": cfg.NodeType},
		map[string]any{"name": nodeconfig.EnvInstanceID, "value": cfg.InstanceID})
	requests := child(child(c, "resources"), "requests")
	if _, ok := requests["cpu"]; !ok && typ.Resources["CPU"] > 0 {
		requests["cpu"] = milliCPU(typ.Resources["CPU"])
	}
	return pod, nil
}

// milliCPU writes a CPU quantity as Kubernetes does: whole CPUs as a
// number, a fraction in thousandths ("500m").
func milliCPU(cpu float64) string {
	m := int64(cpu * 1000)
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return strconv.FormatInt(m, 10) + "m"
}

func deepCopy(o Object) (Object, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var out Object
	return out, json.Unmarshal(b, &out)
}

// CheckTemplate has the server validate the template, as a pod of a
// one-CPU node, in a dry run that creates nothing: a field the server's
// Pod does not have is ErrInvalidArgument.
func (p *Provider) CheckTemplate(ctx context.Context) error {
	pod, err := p.Pod(autoscaler.NodeTypeSpec{Resources: map[string]float64{"CPU": 1}},
		nodeconfig.Config{NodeType: "template-check", InstanceID: "atoll-template-check", NumCPUs: 1})
	if err != nil {
		return err
	}
	return p.client.CreatePod(ctx, p.namespace, pod, true)
}

// Launch creates the instance's pod.
func (p *Provider) Launch(ctx context.Context, typ autoscaler.NodeTypeSpec, cfg nodeconfig.Config) error {
	if cfg.InstanceID == "" {
		return errs.Invalidf("kubernetes provider: a launch without an instance id")
	}
	pod, err := p.Pod(typ, cfg)
	if err != nil {
		return err
	}
	return p.client.CreatePod(ctx, p.namespace, pod, false)
}

// Terminate deletes the instance's pod (its node gets SIGTERM and the
// pod's grace period); a pod already gone is no error.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	if err := p.client.DeletePod(ctx, p.namespace, id); err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	return nil
}

// Instances lists the cluster's worker pods not being deleted, by name,
// with their node type.
func (p *Provider) Instances(ctx context.Context) (map[string]string, error) {
	sel := fmt.Sprintf("%s=%s,%s=%s", LabelCluster, p.cluster, LabelManagedBy, managedBy)
	pods, err := p.client.ListPods(ctx, p.namespace, sel)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, pod := range pods {
		if !pod.Deleting && pod.Phase != "Succeeded" && pod.Phase != "Failed" {
			out[pod.Name] = pod.Labels[LabelNodeType]
		}
	}
	return out, nil
}

// Close does nothing: the pods outlive the head, which takes them over
// when it starts again.
func (p *Provider) Close() error { return nil }
