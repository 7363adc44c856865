// Package kubernetes is the autoscaler's Kubernetes node provider: each
// instance is a worker pod, created and deleted through the API server
// with client-go, from a pod template (deploy/kubernetes/worker-pod.yaml,
// or the cluster file's provider.worker_pod_template). The pod runs
// `atoll start` joining the head's Service; its node reports its node
// type and its pod's name, which is how the autoscaler links the two. It
// registers itself as provider "kubernetes".
//
// Its tests run against client-go's fake clientset and check the
// manifests by strict decoding into the Kubernetes API's types: no API
// server runs where they do.
package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	_ "embed"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/atoll-runtime/atoll/internal/autoscaler"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func init() {
	autoscaler.RegisterProvider("kubernetes", func(env autoscaler.ProviderEnv) (autoscaler.NodeProvider, error) {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, errs.Unavailablef("kubernetes provider: not in a pod of a cluster (%v): the head runs in the cluster (deploy/kubernetes)", err)
		}
		client, err := k8s.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return New(client, env)
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
	namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// Provider creates and deletes worker pods.
type Provider struct {
	client    k8s.Interface
	namespace string
	cluster   string
	head      string
	template  *corev1.Pod
}

// New returns a provider using client, configured by env's cluster file:
// the namespace (default the head pod's own, else "default"), the pod
// template (default the built-in one, DefaultWorkerPod), the head address
// the workers join (default atoll-head.<namespace>.svc:6380).
func New(client k8s.Interface, env autoscaler.ProviderEnv) (*Provider, error) {
	pc := env.File.Provider
	ns := pc.Namespace
	if ns == "" {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			ns = strings.TrimSpace(string(b))
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
	if len(pod.Spec.Containers) == 0 {
		return nil, errs.Invalidf("kubernetes provider: the worker pod template has no container")
	}
	if pc.Image != "" {
		pod.Spec.Containers[0].Image = pc.Image
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

// DecodePod strictly decodes a Pod manifest (YAML or JSON): an unknown or
// duplicated field, or another kind, is ErrInvalidArgument.
func DecodePod(b []byte) (*corev1.Pod, error) {
	obj, err := DecodeStrict(b)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, errs.Invalidf("kubernetes provider: the worker pod template is a %T, want a Pod", obj)
	}
	return pod, nil
}

// DecodeStrict decodes one Kubernetes manifest (YAML or JSON) into its API
// type, refusing unknown and duplicated fields.
func DecodeStrict(b []byte) (any, error) {
	s := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	obj, _, err := s.Decode(bytes.TrimSpace(b), nil, nil)
	if err != nil {
		return nil, errs.Invalidf("kubernetes manifest: %v", err)
	}
	return obj, nil
}

// Pod is the pod of an instance: the template with the instance's name
// and labels, its first container given the node's settings (flags of
// `atoll start` after the template's own arguments, the node type and
// instance in the environment) and CPU requests of the node type.
func (p *Provider) Pod(typ autoscaler.NodeTypeSpec, cfg nodeconfig.Config) (*corev1.Pod, error) {
	pod := p.template.DeepCopy()
	pod.Name, pod.Namespace, pod.GenerateName = cfg.InstanceID, p.namespace, ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelCluster], pod.Labels[LabelNodeType], pod.Labels[LabelManagedBy] = p.cluster, cfg.NodeType, managedBy
	c := &pod.Spec.Containers[0]
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
	c.Args = append(c.Args, args...)
	c.Env = append(c.Env,
		corev1.EnvVar{Name: nodeconfig.EnvNodeType, Value: cfg.NodeType},
		corev1.EnvVar{Name: nodeconfig.EnvInstanceID, Value: cfg.InstanceID})
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok && typ.Resources["CPU"] > 0 {
		c.Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(typ.Resources["CPU"]*1000), resource.DecimalSI)
	}
	return pod, nil
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
	if _, err := p.client.CoreV1().Pods(p.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return errs.Unavailablef("kubernetes provider: create pod %s: %v", pod.Name, err)
	}
	return nil
}

// Terminate deletes the instance's pod (its node gets SIGTERM and the
// pod's grace period); a pod already gone is no error.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	err := p.client.CoreV1().Pods(p.namespace).Delete(ctx, id, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return errs.Unavailablef("kubernetes provider: delete pod %s: %v", id, err)
	}
	return nil
}

// Instances lists the cluster's worker pods not being deleted, by name,
// with their node type.
func (p *Provider) Instances(ctx context.Context) (map[string]string, error) {
	sel := fmt.Sprintf("%s=%s,%s=%s", LabelCluster, p.cluster, LabelManagedBy, managedBy)
	list, err := p.client.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, errs.Unavailablef("kubernetes provider: list pods: %v", err)
	}
	out := map[string]string{}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			out[pod.Name] = pod.Labels[LabelNodeType]
		}
	}
	return out, nil
}

// Close does nothing: the pods outlive the head, which takes them over
// when it starts again.
func (p *Provider) Close() error { return nil }
