// Package local is the autoscaler's local node provider: each instance is
// a node process on this machine (the head's own program, or the cluster
// file's provider.command, re-executed with nodeconfig.EnvNode), a child
// of the head's process that dies with it. It is what tests, samples and a
// laptop use. It registers itself as provider "local".
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/internal/autoscaler"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func init() {
	autoscaler.RegisterProvider("local", func(env autoscaler.ProviderEnv) (autoscaler.NodeProvider, error) { return New(env) })
}

// Bounds of a node process's life.
const (
	// readyTimeout bounds a launch: the process prints its ready line
	// within it, or is killed.
	readyTimeout = 2 * time.Minute
	// stopTimeout is how long a terminated node gets to stop after
	// SIGTERM before it is killed.
	stopTimeout = 15 * time.Second
)

// Provider starts and stops node processes.
type Provider struct {
	exe string
	dir string

	mu    sync.Mutex
	procs map[string]*instance
}

type instance struct {
	typ  string
	proc *localcluster.Process // nil while it starts
	stop bool                  // terminated while it started
}

// New returns a local provider; its nodes' logs and session directories
// go in env.Dir (a directory of its own if empty).
func New(env autoscaler.ProviderEnv) (*Provider, error) {
	exe := env.File.Provider.Command
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	} else if !filepath.IsAbs(exe) {
		exe = filepath.Join(env.File.Dir, exe)
	}
	dir := env.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "atoll-autoscaler-"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Provider{exe: exe, dir: dir, procs: map[string]*instance{}}, nil
}

// Launch starts a node process for the instance cfg names and waits for
// its ready line.
func (p *Provider) Launch(ctx context.Context, typ autoscaler.NodeTypeSpec, cfg nodeconfig.Config) error {
	id := cfg.InstanceID
	if id == "" {
		return errors.New("local provider: a launch without an instance id")
	}
	cfg.RandomPorts = true
	cfg.Port, cfg.GossipPort, cfg.TransferPort, cfg.MetricsPort = 0, 0, 0, 0
	if cfg.NodeIP == "" {
		cfg.NodeIP = "127.0.0.1"
	}
	cfg.SessionDir = filepath.Join(p.dir, id)
	cfg.LogFile = filepath.Join(p.dir, id+".log")
	if err := os.MkdirAll(cfg.SessionDir, 0o700); err != nil {
		return err
	}
	nodeEnv, err := cfg.Environ()
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.procs[id] != nil {
		p.mu.Unlock()
		return fmt.Errorf("local provider: instance %s launched already", id)
	}
	in := &instance{typ: cfg.NodeType}
	p.procs[id] = in
	p.mu.Unlock()
	env := append(localcluster.FilterEnv(os.Environ(), nodeconfig.EnvNode), nodeEnv)
	proc, _, err := localcluster.StartProcess(p.exe, nil, env, cfg.LogFile, readyTimeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		delete(p.procs, id)
		return fmt.Errorf("local provider: instance %s: %w", id, err)
	}
	in.proc = proc
	go p.reap(id, proc)
	if in.stop {
		go func() { _ = proc.Stop(stopTimeout) }()
	}
	return nil
}

// reap forgets an instance once its process exited.
func (p *Provider) reap(id string, proc *localcluster.Process) {
	<-proc.Done()
	p.mu.Lock()
	if in := p.procs[id]; in != nil && in.proc == proc {
		delete(p.procs, id)
	}
	p.mu.Unlock()
}

// Terminate stops an instance's process: SIGTERM, then SIGKILL after
// stopTimeout (a drained node has exited by then).
func (p *Provider) Terminate(_ context.Context, id string) error {
	p.mu.Lock()
	var proc *localcluster.Process
	if in := p.procs[id]; in != nil {
		proc = in.proc
		if proc == nil {
			in.stop = true // still starting: stopped once it is ready
		}
	}
	p.mu.Unlock()
	if proc == nil {
		return nil
	}
	if err := proc.Stop(stopTimeout); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Instances lists the live instances.
func (p *Provider) Instances(context.Context) (map[string]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.procs))
	for id, in := range p.procs {
		out[id] = in.typ
	}
	return out, nil
}

// Close kills what is left (the processes die with the head anyway).
func (p *Provider) Close() error {
	p.mu.Lock()
	var procs []*localcluster.Process
	for _, in := range p.procs {
		if in.proc != nil {
			procs = append(procs, in.proc)
		}
	}
	p.mu.Unlock()
	for _, proc := range procs {
		_ = proc.Signal(syscall.SIGKILL)
		proc.Wait(localcluster.KillWait)
	}
	return nil
}
