package kubernetes

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The Kubernetes API the provider speaks is three calls on pods (create,
// delete, list), plain JSON over HTTPS: the API server's REST paths
// under /api/v1, authenticated by the pod's service account token. A
// generated clientset would link every API group's types into the atoll
// command for these three calls.

// Where a pod finds its service account's credentials and the API
// server (the in-cluster configuration every Kubernetes client reads).
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	envServiceHost    = "KUBERNETES_SERVICE_HOST"
	envServicePort    = "KUBERNETES_SERVICE_PORT"
)

// Bounds on a call: the API server's answer is read for at most
// callTimeout and maxResponse bytes (a pod list of a large namespace
// fits; a server that streams without end does not hang the provider).
const (
	callTimeout = 30 * time.Second
	maxResponse = 64 << 20
)

// Client calls the API server's pod endpoints.
type Client struct {
	base  string // https://host:port
	http  *http.Client
	token func() (string, error)
}

// NewClient returns a client of the API server at base (https://host:port)
// through hc, authenticating each call with the bearer token token
// returns (read per call: a projected service account token rotates).
func NewClient(base string, hc *http.Client, token func() (string, error)) *Client {
	return &Client{base: strings.TrimSuffix(base, "/"), http: hc, token: token}
}

// InClusterClient returns the client of the cluster the process runs in,
// from the pod's service account (its token and CA certificate) and the
// API server's address in the environment. Outside a pod it fails with
// ErrUnavailable.
func InClusterClient() (*Client, error) {
	host, port := os.Getenv(envServiceHost), os.Getenv(envServicePort)
	if host == "" || port == "" {
		return nil, errs.Unavailablef("kubernetes provider: %s and %s are not set: not in a pod of a cluster (the head runs in the cluster: deploy/kubernetes)", envServiceHost, envServicePort)
	}
	ca, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return nil, errs.Unavailablef("kubernetes provider: the service account's CA certificate: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errs.Unavailablef("kubernetes provider: %s/ca.crt holds no PEM certificate", serviceAccountDir)
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
	}}
	token := func() (string, error) {
		b, err := os.ReadFile(serviceAccountDir + "/token")
		if err != nil {
			return "", errs.Unavailablef("kubernetes provider: the service account's token: %v", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return NewClient("https://"+net.JoinHostPort(host, port), hc, token), nil
}

// PodInfo is what the provider reads of a listed pod.
type PodInfo struct {
	Name     string
	Labels   map[string]string
	Deleting bool   // metadata.deletionTimestamp is set
	Phase    string // status.phase: Pending, Running, Succeeded, Failed, Unknown
}

// CreatePod creates pod (a Pod object) in namespace; with dryRun the
// server validates it and stores nothing. The server decodes it strictly
// (an unknown or duplicated field is refused): a refusal of the object
// is ErrInvalidArgument carrying the server's message; any other
// failure (an existing pod of that name among them) ErrUnavailable.
func (c *Client) CreatePod(ctx context.Context, namespace string, pod Object, dryRun bool) error {
	body, err := json.Marshal(pod)
	if err != nil {
		return errs.Invalidf("kubernetes provider: encode pod: %v", err)
	}
	q := url.Values{"fieldValidation": {"Strict"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	_, err = c.call(ctx, http.MethodPost, podsPath(namespace, "")+"?"+q.Encode(), body)
	return err
}

// DeletePod deletes the pod name of namespace (its containers get
// SIGTERM and the pod's grace period). A pod that is not there is
// ErrNotFound.
func (c *Client) DeletePod(ctx context.Context, namespace, name string) error {
	_, err := c.call(ctx, http.MethodDelete, podsPath(namespace, name), nil)
	return err
}

// ListPods lists the pods of namespace whose labels match selector (a
// label selector: k=v pairs, comma separated).
func (c *Client) ListPods(ctx context.Context, namespace, selector string) ([]PodInfo, error) {
	b, err := c.call(ctx, http.MethodGet, podsPath(namespace, "")+"?"+url.Values{"labelSelector": {selector}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name              string            `json:"name"`
				Labels            map[string]string `json:"labels"`
				DeletionTimestamp *string           `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil || list.Kind != "PodList" {
		return nil, errs.Unavailablef("kubernetes provider: list pods: the answer is not a PodList (kind %q, %v)", list.Kind, err)
	}
	out := make([]PodInfo, 0, len(list.Items))
	for _, it := range list.Items {
		out = append(out, PodInfo{Name: it.Metadata.Name, Labels: it.Metadata.Labels,
			Deleting: it.Metadata.DeletionTimestamp != nil, Phase: it.Status.Phase})
	}
	return out, nil
}

func podsPath(namespace, name string) string {
	p := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/pods"
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// call sends one request and returns the body of a 2xx answer, or the
// error the answer's status (a Kubernetes Status object) stands for.
func (c *Client) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	token, err := c.token()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, errs.Invalidf("kubernetes provider: %s %s: %v", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, errs.Unavailablef("kubernetes provider: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	switch {
	case err != nil:
		return nil, errs.Unavailablef("kubernetes provider: %s %s: reading the answer: %v", method, path, err)
	case len(b) > maxResponse:
		return nil, errs.Unavailablef("kubernetes provider: %s %s: the answer passes %d bytes", method, path, maxResponse)
	case resp.StatusCode/100 == 2:
		return b, nil
	}
	// A Status object says why (its message is the server's words).
	var st struct {
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	if json.Unmarshal(b, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(b[:min(len(b), 512)]))
	}
	msg := fmt.Sprintf("kubernetes provider: %s %s: %s (%d %s)", method, path, st.Message, resp.StatusCode, st.Reason)
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return nil, errs.Invalidf("%s", msg)
	case http.StatusNotFound:
		return nil, errs.NotFoundf("%s", msg)
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, errs.PermissionDeniedf("%s", msg)
	}
	return nil, errs.Unavailablef("%s", msg)
}
