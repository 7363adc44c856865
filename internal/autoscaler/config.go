package autoscaler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// ClusterFile is a cluster's YAML file: what `atoll up` starts, the head's
// autoscaler scales and `atoll down` stops. Unknown keys are refused.
//
//	cluster_name: demo
//	max_workers: 4            # every worker type together (default: the sum of their max)
//	upscaling_speed: 1.0      # launching at once: max(5, speed × workers alive)
//	idle_timeout: 5m          # a worker idle this long is drained, then removed
//	launch_timeout: 5m        # a launched node that has not joined by then is terminated
//	interval: 2s              # how often the autoscaler looks at the cluster
//	provider:
//	  type: local             # local (node processes on this machine) or kubernetes
//	head:
//	  num_cpus: 0             # the head's CPUs (default this machine's), and
//	  resources: {}           # its custom resources
//	node_types:
//	  cpu2:
//	    resources: {CPU: 2}   # what a node of the type offers
//	    min_workers: 0
//	    max_workers: 3
//	    object_store_memory: 256MiB
type ClusterFile struct {
	ClusterName    string                  `yaml:"cluster_name"`
	MaxWorkers     int                     `yaml:"max_workers"`
	UpscalingSpeed float64                 `yaml:"upscaling_speed"`
	IdleTimeout    Duration                `yaml:"idle_timeout"`
	LaunchTimeout  Duration                `yaml:"launch_timeout"`
	Interval       Duration                `yaml:"interval"`
	Provider       ProviderConfig          `yaml:"provider"`
	Head           HeadConfig              `yaml:"head"`
	NodeTypes      map[string]NodeTypeSpec `yaml:"node_types"`
	// Dir is the directory of the file (the provider's relative paths
	// are relative to it); set by ReadClusterFile.
	Dir string `yaml:"-"`
}

// ProviderConfig says how the autoscaler launches and stops nodes.
type ProviderConfig struct {
	// Type is the provider: "local" (node processes of this machine, the
	// head's children) or "kubernetes" (pods, through the API server).
	Type string `yaml:"type"`
	// Kubernetes: the namespace of the worker pods (default the head's
	// own, from its service account), the worker pod template (a Pod
	// manifest, a path relative to the cluster file; default the
	// built-in one), and the head's address the workers join (default
	// atoll-head.<namespace>.svc:6380, the manifests' head Service).
	Namespace         string `yaml:"namespace"`
	WorkerPodTemplate string `yaml:"worker_pod_template"`
	HeadAddress       string `yaml:"head_address"`
	// Image is the worker pods' image when the template names none.
	Image string `yaml:"image"`
	// Command is the local provider's node program (default the head's
	// own, which must hand a node process to atoll.Init: the atoll
	// command and programs calling atoll.Init first thing do).
	Command string `yaml:"command"`
}

// HeadConfig is the head node's settings (as `atoll start --head` takes
// them).
type HeadConfig struct {
	NumCPUs           *float64           `yaml:"num_cpus"`
	Resources         map[string]float64 `yaml:"resources"`
	ObjectStoreMemory Size               `yaml:"object_store_memory"`
	Port              int                `yaml:"port"`
	DashboardPort     int                `yaml:"dashboard_port"`
}

// NodeTypeSpec is one node type of the cluster file.
type NodeTypeSpec struct {
	// Resources are what a node of the type offers: CPU, memory (bytes),
	// custom ones. CPU is required.
	Resources  map[string]float64 `yaml:"resources"`
	MinWorkers int                `yaml:"min_workers"`
	MaxWorkers int                `yaml:"max_workers"`
	// ObjectStoreMemory is the object store of its nodes (default the
	// node's own default).
	ObjectStoreMemory Size `yaml:"object_store_memory"`
}

// Defaults of the cluster file.
const (
	DefaultUpscalingSpeed = 1.0
	DefaultMinLaunching   = 5
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultLaunchTimeout  = 5 * time.Minute
	DefaultInterval       = 2 * time.Second
)

// Duration is a time.Duration written as in Go ("90s", "5m").
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 90s, 5m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Size is a number of bytes, plain or with a unit ("256MiB", "2GB").
type Size uint64

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?$`)

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(n.Value))
	if m == nil {
		return fmt.Errorf("line %d: %q is not a size (e.g. 256MiB, 2GB)", n.Line, n.Value)
	}
	var v float64
	if _, err := fmt.Sscan(m[1], &v); err != nil {
		return fmt.Errorf("line %d: %q: %v", n.Line, n.Value, err)
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	*s = Size(v * mult)
	return nil
}

// ReadClusterFile reads and checks a cluster file.
func ReadClusterFile(path string) (*ClusterFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := ParseClusterFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Dir, err = filepath.Abs(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseClusterFile decodes a cluster file (unknown keys are an error),
// applies the defaults and checks it: an error is ErrInvalidArgument.
func ParseClusterFile(r io.Reader) (*ClusterFile, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var c ClusterFile
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errs.Invalidf("cluster file: empty")
		}
		return nil, errs.Invalidf("cluster file: %v", err)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *ClusterFile) check() error {
	if c.UpscalingSpeed == 0 {
		c.UpscalingSpeed = DefaultUpscalingSpeed
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = Duration(DefaultIdleTimeout)
	}
	if c.LaunchTimeout == 0 {
		c.LaunchTimeout = Duration(DefaultLaunchTimeout)
	}
	if c.Interval == 0 {
		c.Interval = Duration(DefaultInterval)
	}
	if c.Provider.Type == "" {
		c.Provider.Type = "local"
	}
	bad := func(format string, args ...any) error { return errs.Invalidf("cluster file: "+format, args...) }
	switch {
	case c.UpscalingSpeed < 0 || math.IsNaN(c.UpscalingSpeed) || math.IsInf(c.UpscalingSpeed, 0):
		return bad("upscaling_speed %g: want a positive number", c.UpscalingSpeed)
	case c.MaxWorkers < 0:
		return bad("max_workers %d: want at least 0", c.MaxWorkers)
	case time.Duration(c.Interval) < 100*time.Millisecond:
		return bad("interval %v: want at least 100ms", time.Duration(c.Interval))
	case c.ClusterName != "" && !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$`).MatchString(c.ClusterName):
		return bad("cluster_name %q: lower-case letters, digits and '-' (a Kubernetes label value)", c.ClusterName)
	case len(c.NodeTypes) == 0:
		return bad("no node_types")
	}
	for _, name := range slices.Sorted(maps.Keys(c.NodeTypes)) {
		t := c.NodeTypes[name]
		switch {
		case !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$`).MatchString(name):
			return bad("node type %q: lower-case letters, digits and '-'", name)
		case t.MinWorkers < 0 || t.MaxWorkers < t.MinWorkers:
			return bad("node type %s: min_workers %d, max_workers %d: want 0 <= min <= max", name, t.MinWorkers, t.MaxWorkers)
		case t.Resources["CPU"] <= 0:
			return bad("node type %s: resources need CPU > 0 (the slots its tasks run in)", name)
		}
		for k, v := range t.Resources {
			if !(v >= 0) || math.IsInf(v, 0) || raylet.IsGroupResource(k) {
				return bad("node type %s: resource %s=%g", name, k, v)
			}
		}
	}
	if c.Head.NumCPUs != nil && *c.Head.NumCPUs < 0 {
		return bad("head num_cpus %g: want at least 0", *c.Head.NumCPUs)
	}
	return nil
}

// Policy is the scaling part of the file.
func (c *ClusterFile) Policy() Policy {
	p := Policy{MaxWorkers: c.MaxWorkers, UpscalingSpeed: c.UpscalingSpeed, MinLaunching: DefaultMinLaunching,
		IdleTimeout: time.Duration(c.IdleTimeout), LaunchTimeout: time.Duration(c.LaunchTimeout)}
	for _, name := range slices.Sorted(maps.Keys(c.NodeTypes)) {
		t := c.NodeTypes[name]
		p.Types = append(p.Types, NodeType{Name: name, Resources: raylet.Resources(t.Resources).Clone(), Min: t.MinWorkers, Max: t.MaxWorkers})
	}
	return p
}
