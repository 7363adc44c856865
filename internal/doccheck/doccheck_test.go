package doccheck

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repoRoot is the repository's root: the clone the README's recipe
// points a new module at.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// fence is a fenced block of a Markdown file: its language and text.
type fence struct {
	lang, text string
	line       int
}

var fenceRE = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```\n")

// fences returns the fenced blocks of file, in order.
func fences(t *testing.T, file string) []fence {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []fence
	for _, m := range fenceRE.FindAllSubmatchIndex(data, -1) {
		out = append(out, fence{lang: string(data[m[2]:m[3]]), text: string(data[m[4]:m[5]]),
			line: bytes.Count(data[:m[0]], []byte("\n")) + 1})
	}
	return out
}

// section returns the blocks of file under the heading "## title".
func section(t *testing.T, file, title string) []fence {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(data, []byte("\n## "+title+"\n"))
	if start < 0 {
		t.Fatalf("%s has no section %q", file, title)
	}
	startLine := bytes.Count(data[:start], []byte("\n")) + 1
	end := bytes.Index(data[start+1:], []byte("\n## "))
	var out []fence
	for _, f := range fences(t, file) {
		if f.line > startLine && (end < 0 || f.line < startLine+bytes.Count(data[start+1:start+1+end], []byte("\n"))+1) {
			out = append(out, f)
		}
	}
	return out
}

// goEnv is the environment of the go commands the test runs under a home
// of its own: this machine's caches, so nothing is built or fetched twice.
func goEnv(t *testing.T, home, tmp string) []string {
	t.Helper()
	env := []string{"HOME=" + home, "TMPDIR=" + tmp, "PATH=" + os.Getenv("PATH"), "GOFLAGS=-mod=mod"}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GONOSUMDB", "GOSUMDB", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			env = append(env, v+"="+s)
		}
	}
	return env
}

// runScript runs a shell script in dir with env, failing t with its output
// if it fails.
func runScript(ctx context.Context, t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v running:\n%s\noutput:\n%s", err, script, out)
	}
	return string(out)
}

// TestREADMERecipe does what the README tells a newcomer: a module of
// their own pointing at the clone, the first program in it, run; then the
// CLI built, a head started, the program built and submitted as a job,
// its output followed, the nodes stopped. The README's commands run as
// written, with two changes a test needs: the clone is this checkout (a
// link, not git clone), and the head takes free ports.
func TestREADMERecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module and starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := repoRoot(t)
	readme := filepath.Join(root, "README.md")
	home, tmp := t.TempDir(), t.TempDir()
	env := goEnv(t, home, tmp)

	recipe := section(t, readme, "Use atoll from your own module")
	program := section(t, readme, "A first program")
	cluster := section(t, readme, "Run it on a cluster")
	if len(recipe) != 1 || len(program) < 1 || program[0].lang != "go" || len(cluster) != 1 {
		t.Fatalf("the README's recipe, first program and cluster sections changed shape: %d, %d, %d blocks", len(recipe), len(program), len(cluster))
	}
	before, after, ok := strings.Cut(recipe[0].text, "# write main.go")
	if !ok {
		t.Fatal(`the recipe has no "# write main.go" step`)
	}
	_, after, _ = strings.Cut(after, "\n")
	clone := regexp.MustCompile(`(?m)^git clone \S+( \S+)* (\$HOME/src/atoll)$`)
	if !clone.MatchString(before) {
		t.Fatalf("the recipe does not clone into $HOME/src/atoll:\n%s", before)
	}
	before = clone.ReplaceAllString(before, "mkdir -p $$HOME/src && ln -s "+root+" $2")
	runScript(ctx, t, home, env, before)
	if err := os.WriteFile(filepath.Join(home, "hello", "main.go"), []byte(program[0].text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The program runs on the cluster embedded in it.
	out := runScript(ctx, t, filepath.Join(home, "hello"), env, after)
	if !strings.Contains(out, "49 <nil>\n15\n") {
		t.Fatalf("go run . printed:\n%s\nwant 49 <nil> and 15", out)
	}

	// On a cluster: the head on free ports (the test's only change).
	script := strings.Replace(cluster[0].text, "./atoll start --head ",
		"./atoll start --head --port 0 --gossip-port 0 --transfer-port 0 --metrics-port 0 --dashboard-port 0 ", 1)
	if script == cluster[0].text {
		t.Fatalf("the cluster section does not start a head with ./atoll start --head:\n%s", script)
	}
	t.Cleanup(func() {
		stop := exec.Command(filepath.Join(home, "hello", "atoll"), "stop", "--force")
		stop.Env = env
		_ = stop.Run()
	})
	out = runScript(ctx, t, filepath.Join(home, "hello"), env, script)
	for _, want := range []string{"49 <nil>\n15\n", "1 node alive", "stopped 1 atoll node(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the cluster section's output lacks %q:\n%s", want, out)
		}
	}
}

// TestGuidesCode: every complete program (package main) in the README and
// the guides compiles in a module pointing at this checkout; every other
// Go block parses as declarations or as statements.
func TestGuidesCode(t *testing.T) {
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	var programs []fence
	snippets := 0
	for _, file := range files {
		for _, f := range fences(t, file) {
			if f.lang != "go" {
				continue
			}
			where := filepath.Base(file) + ":" + strconv.Itoa(f.line)
			if strings.HasPrefix(f.text, "package main\n") {
				f.lang = where
				programs = append(programs, f)
				continue
			}
			snippets++
			if err := parses(where, f.text); err != nil {
				t.Errorf("%s: the Go block parses as neither declarations, statements, nor declarations then statements: %v", where, err)
			}
		}
	}
	if len(programs) == 0 || snippets == 0 {
		t.Fatalf("found %d programs and %d snippets: the guides moved?", len(programs), snippets)
	}
	if testing.Short() {
		t.Skip("builds the complete programs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	home, tmp := t.TempDir(), t.TempDir()
	env := goEnv(t, home, tmp)
	mod := filepath.Join(home, "guides")
	script := "mkdir -p " + mod + " && cd " + mod + " && go mod init example.com/guides && " +
		"go mod edit -require=github.com/atoll-runtime/atoll@v0.0.0 -replace=github.com/atoll-runtime/atoll=" + root
	for i, p := range programs {
		dir := filepath.Join(mod, "p"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(p.text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Compiled, not linked: go vet type-checks each program and go list
	// -export compiles it (linking each one, as go build ./... does, took
	// 30 of the test's 33 seconds, and a pure Go program that compiles
	// links).
	out := runScript(ctx, t, home, env, script+" && go mod tidy && go vet ./... && go list -export -f '{{if not .Export}}{{.ImportPath}}: not compiled{{end}}' ./...")
	if strings.Contains(out, "not compiled") {
		t.Fatalf("go list -export:\n%s", out)
	}
	t.Logf("compiled %d complete programs, parsed %d snippets", len(programs), snippets)
}

// elision matches the "..." a guide writes for code left out, in a block
// or a call.
var elision = regexp.MustCompile(`\{ \.\.\. \}|\.\.\.\)`)

// parses reports whether a guide's snippet is Go: declarations,
// statements, or declarations followed by statements (cut where a line
// starts at the left margin), with its elisions left out.
func parses(where, text string) error {
	text = elision.ReplaceAllStringFunc(text, func(m string) string {
		if m == "...)" {
			return ")"
		}
		return "{}"
	})
	lines := strings.SplitAfter(text, "\n")
	var first error
	for cut := len(lines); cut >= 0; cut-- {
		if cut > 0 && cut < len(lines) && (lines[cut] == "" || lines[cut][0] == ' ' || lines[cut][0] == '\t' || lines[cut][0] == '}' || lines[cut][0] == ')') {
			continue // not a line at the left margin
		}
		decls, stmts := strings.Join(lines[:cut], ""), strings.Join(lines[cut:], "")
		src := "package p\n" + decls + "\nfunc _() {\n" + stmts + "\n}\n"
		_, err := parser.ParseFile(token.NewFileSet(), where, src, 0)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// TestParsesRejectsBrokenGo: the snippet check can fail.
func TestParsesRejectsBrokenGo(t *testing.T) {
	for _, bad := range []string{"x := (1\n", "func f( {\n}\n", "var x = \nfmt.Println(\n"} {
		if parses("bad", bad) == nil {
			t.Errorf("%q parses", bad)
		}
	}
	for _, good := range []string{"var x = 1\n\ny := x\n", "ds.Each(func() { ... })\n", "f(a, ...)\n"} {
		if err := parses("good", good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}
