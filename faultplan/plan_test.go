package faultplan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

const example = `
seed: 42
rules:
  - name: lossy-results
    action: duplicate
    message: TaskResult
    actor: owner
    probability: 0.3
    count: 10
  - action: delay
    message: CreateObjectRequest
    delay: 20ms
    node: workers
  - action: fail-creates
    at: 2s
    count: 3
  - action: kill-node
    at: 5s
    every: 10s
    times: 2
`

func TestParse(t *testing.T) {
	p, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if p.Seed != 42 || len(p.Rules) != 4 {
		t.Fatalf("plan %+v", p)
	}
	r := p.Rules[1]
	if r.Name != "delay#1" || time.Duration(r.Delay) != 20*time.Millisecond || r.Node != Workers || r.Message != "CreateObjectRequest" {
		t.Fatalf("rule 1: %+v", r)
	}
	if k := p.Rules[3]; !k.Action.Timed() || time.Duration(k.Every) != 10*time.Second || k.Times != 2 {
		t.Fatalf("rule 3: %+v", k)
	}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	if q, err := Load(path); err != nil || len(q.Rules) != 4 {
		t.Fatalf("Load: %v, %v", q, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("Load of a missing file: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{"rules: [{action: explode}]", "unknown action"},
		{"rules: [{action: drop, bogus: 1}]", "bogus"},
		{"rules: [{action: drop, probability: 1.5}]", "probability"},
		{"rules: [{action: delay}]", "positive one"},
		{"rules: [{action: drop, delay: 5ms}]", "delay is for"},
		{"rules: [{action: drop, at: 1s}]", "timed actions"},
		{"rules: [{action: kill-node, message: TaskResult}]", "message rules"},
		{"rules: [{action: kill-node, times: 3}]", "every > 0"},
		{"rules: [{action: drop, node: moon}]", "node"},
		{"rules: [{action: drop, count: -2}]", "count"},
		{"rules: [{action: delay, delay: soon}]", "duration"},
		{"seed: [1]", "fault plan"},
		{"rules: [{action: partition}]", "needs a duration"},
		{"rules: [{action: partition, for: 11m}]", "at most"},
		{"rules: [{action: partition, for: 1s, direction: sideways}]", "direction"},
		{"rules: [{action: partition, for: 1s, message: TaskResult}]", "not for partitions"},
		{"rules: [{action: kill-node, direction: both}]", "direction is for"},
		{"rules: [{action: kill-node, for: 1s}]", "for"},
	} {
		_, err := Parse([]byte(tc.plan))
		if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument mentioning %q", tc.plan, err, tc.want)
		}
	}
	p, err := Parse([]byte("rules: [{action: partition, at: 2s, for: 3s}]"))
	if err != nil || p.Rules[0].Direction != Both || !p.Rules[0].Action.Timed() {
		t.Fatalf("a partition rule: %+v, %v; want direction both by default, timed", p, err)
	}
	if p, err := Parse(nil); err != nil || len(p.Rules) != 0 {
		t.Fatalf("empty plan: %v, %v", p, err)
	}
}

// Install puts in only the message rules for the node's role.
func TestInstallByRole(t *testing.T) {
	p, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	for role, want := range map[Role]int{Driver: 1, Head: 1, Workers: 2} {
		fi := p.Injector(role)
		n := 0
		for id := 1; id <= 4; id++ { // ids are 1..k for k added rules
			if fi.Remove(0) || fi.Remove(actorsRuleID(id)) {
				n++
			}
		}
		if n != want {
			t.Errorf("%s: %d rules installed, want %d", role, n, want)
		}
	}
}
