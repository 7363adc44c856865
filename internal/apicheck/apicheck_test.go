package apicheck

import (
	"os/exec"
	"strings"
	"testing"
)

// cases maps each package under testdata to the compiler message it must
// fail with ("" for a program that must build).
var cases = map[string]string{
	// An argument of the wrong type names the types, not an unexported
	// method.
	"wrongref": "atoll.ObjectRef[int] does not implement atoll.Arg[string] (wrong type for method ArgOfType)\n\t\thave ArgOfType(int)\n\t\twant ArgOfType(string)",
	"plainvalue": "cannot use 7 (constant of type int) as atoll.Arg[int] value in argument to square.Remote: " +
		"int does not implement atoll.Arg[int] (missing method ArgOfType)",
	// Options of one kind of call are refused by the others.
	"actoroptontask":      "atoll.ActorOnlyOption does not implement atoll.TaskOption (missing method AppliesToTasks)",
	"boundactoroptontask": "as atoll.TaskOption value in argument to square.Options: atoll.ActorOnlyOption does not implement atoll.TaskOption (missing method AppliesToTasks)",
	"taskoptonactor":      "atoll.TaskOrMethodOption does not implement atoll.ActorOption (missing method AppliesToActors)",
	"methodoptonactor":    "atoll.MethodOnlyOption does not implement atoll.ActorOption (missing method AppliesToActors)",
	"actoroptonmethod":    "atoll.ActorOnlyOption does not implement atoll.MethodOption (missing method AppliesToMethods)",
	"placementonmethod":   "atoll.TaskOrActorOption does not implement atoll.MethodOption (missing method AppliesToMethods)",
	// Options of several kinds are accepted by each.
	"good": "",
}

// TestMisuseFailsToCompileWithAClearMessage builds every package under
// testdata in one go build and checks each one's errors.
func TestMisuseFailsToCompileWithAClearMessage(t *testing.T) {
	const prefix = "github.com/atoll-runtime/atoll/internal/apicheck/testdata/"
	// Library packages, so that go build compiles them and links
	// nothing.
	args := []string{"build"}
	for name := range cases {
		args = append(args, "./testdata/"+name)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err == nil {
		t.Fatalf("go build of the misuse packages succeeded; each but \"good\" must fail:\n%s", out)
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("running go build: %v", err)
	}
	// The output is one section per failing package, headed "# path".
	got := map[string]string{}
	var cur string
	for line := range strings.Lines(string(out)) {
		if path, ok := strings.CutPrefix(line, "# "); ok {
			cur = strings.TrimPrefix(strings.TrimSpace(path), prefix)
			continue
		}
		got[cur] += line
	}
	if rest := got[""]; rest != "" {
		t.Errorf("go build output outside any package's section:\n%s", rest)
	}
	for name, want := range cases {
		msg, failed := got[name]
		switch {
		case want == "" && failed:
			t.Errorf("%s: must build, failed with:\n%s", name, msg)
		case want != "" && !failed:
			t.Errorf("%s: built; want a compile error containing:\n%s", name, want)
		case want != "" && !strings.Contains(msg, want):
			t.Errorf("%s: compile error\n%s\nwant it to contain:\n%s", name, msg, want)
		}
	}
}
