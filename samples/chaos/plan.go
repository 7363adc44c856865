package main

import (
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/atoll-runtime/atoll/faultplan"
)

// defaultPlan is the plan a run uses without -plan. Its message rules
// hit messages that flow in every run (the fault counts of the table
// show it): task submissions at the raylets of the node processes, store
// creations everywhere, task results at the driver's owner. It
// duplicates only TaskResult, which the owner is documented to apply
// once (ARCHITECTURE.md, "Failure handling"). Its timed rules fail the
// driver's store's next creation three times and kill one node that is
// neither the head nor the driver's, five seconds in.
const defaultPlan = `# samples/chaos's default plan
seed: 1
rules:
  - name: slow-submits
    action: delay
    message: SubmitTask
    actor: raylet
    node: workers
    delay: 5ms
    probability: 0.2
  - name: slow-creates
    action: delay
    message: CreateObjectRequest
    actor: objectstore
    delay: 2ms
    probability: 0.2
  - name: twice-results
    action: duplicate
    message: TaskResult
    actor: owner
    node: driver
    probability: 0.2
  - name: full-driver-store
    action: fail-creates
    at: 1s
    every: 3s
    times: 3
    count: 1
  - name: kill-a-node
    action: kill-node
    at: 5s
`

// loadPlan reads the plan in file ("" for the default plan) and, if seed
// is set, replaces its seed.
func loadPlan(file string, seed *uint64) (*faultplan.Plan, error) {
	var p *faultplan.Plan
	var err error
	if file == "" {
		p, err = faultplan.Parse([]byte(defaultPlan))
	} else {
		p, err = faultplan.Load(file)
	}
	if err != nil {
		return nil, err
	}
	if seed != nil {
		p.Seed = *seed
	}
	return p, nil
}

// writePlan writes p to dir/plan.yaml for the node processes
// (faultplan.EnvPlan) and returns the file's path.
func writePlan(dir string, p *faultplan.Plan) (string, error) {
	b, err := yaml.Marshal(p)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "plan.yaml")
	return file, os.WriteFile(file, b, 0o600)
}

// timedFirings is how many actions the plan's timed rules take in all.
func timedFirings(p *faultplan.Plan) int {
	n := 0
	for _, r := range p.Rules {
		if r.Action.Timed() {
			n += max(r.Times, 1)
		}
	}
	return n
}

// shortMessage is a message's type without its protobuf package
// ("atoll.TaskResult" -> "TaskResult").
func shortMessage(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.HasPrefix(name, "*") {
		return name[i+1:]
	}
	return name
}
