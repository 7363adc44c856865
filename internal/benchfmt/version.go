package benchfmt

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// modulePath is the module whose version Version reports.
const modulePath = "github.com/atoll-runtime/atoll"

// Version returns the atoll version to record in a benchmark's config:
//   - `git describe --always --dirty` run in the atoll module directory
//     (found by walking up from the working directory to the go.mod of
//     github.com/atoll-runtime/atoll), when git and the checkout are there;
//   - else the VCS revision stamped in the binary (debug.ReadBuildInfo;
//     absent under -buildvcs=false), with "-dirty" if the tree was modified;
//   - else the module version of the binary, if it was built from a tagged
//     module;
//   - else "dev".
//
// The result is computed once per process.
func Version() string { return versionOnce() }

var versionOnce = sync.OnceValue(version)

func version() string {
	if dir, ok := moduleDir(); ok {
		if v, ok := gitDescribe(dir); ok {
			return v
		}
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		return buildInfoVersion(info)
	}
	return "dev"
}

// buildInfoVersion picks the version out of build information.
func buildInfoVersion(info *debug.BuildInfo) string {
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		return rev
	}
	if v := info.Main.Version; info.Main.Path == modulePath && v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

// moduleDir walks up from the working directory to the directory whose
// go.mod declares modulePath.
func moduleDir() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			return dir, declaresModule(data, modulePath)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// declaresModule reports whether go.mod content declares module path.
func declaresModule(gomod []byte, path string) bool {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == path
		}
	}
	return false
}

// gitDescribe runs git describe in dir, giving up after a few seconds.
func gitDescribe(dir string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = dir
	out, err := cmd.Output()
	v := strings.TrimSpace(string(out))
	return v, err == nil && v != ""
}
