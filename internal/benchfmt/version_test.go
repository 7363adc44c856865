package benchfmt

import (
	"os/exec"
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	v := Version()
	if v == "" {
		t.Fatal("empty version")
	}
	if Version() != v {
		t.Fatal("Version changed between calls")
	}
	// The tests run inside the atoll checkout: with git installed the
	// version must come from git describe.
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	dir, ok := moduleDir()
	if !ok {
		t.Fatal("moduleDir did not find the atoll module")
	}
	if want, ok := gitDescribe(dir); ok && v != want {
		t.Fatalf("Version() = %q, git describe says %q", v, want)
	}
}

func TestBuildInfoVersion(t *testing.T) {
	for _, tc := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.modified", Value: "true"},
		}}, "0123456789ab-dirty"},
		{debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "abc"},
		{debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.3.0"}}, "v0.3.0"},
		{debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "dev"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/other", Version: "v1.0.0"}}, "dev"},
	} {
		if got := buildInfoVersion(&tc.info); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.info, got, tc.want)
		}
	}
}

func TestDeclaresModule(t *testing.T) {
	if !declaresModule([]byte("// c\nmodule github.com/atoll-runtime/atoll\n\ngo 1.26\n"), modulePath) {
		t.Error("plain module line")
	}
	if !declaresModule([]byte(`module "github.com/atoll-runtime/atoll"`), modulePath) {
		t.Error("quoted module line")
	}
	if declaresModule([]byte("module example.com/x\n"), modulePath) {
		t.Error("other module accepted")
	}
}
