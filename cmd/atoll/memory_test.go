package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func TestMemorySampleFlags(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	csvFile := filepath.Join(dir, "mem.csv")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sample", "-1s", "-o", csvFile}, "--sample -1s: want a positive interval"},
		{[]string{"--sample", "0s", "-o", csvFile}, "--sample 0s: want a positive interval"},
		{[]string{"--sample", "1s"}, "--sample needs -o FILE (.csv or .svg)"},
		{[]string{"--sample", "1s", "-o", filepath.Join(dir, "mem.png")}, `mem.png": want a .csv or .svg file`},
		{[]string{"--sample", "1s", "-o", filepath.Join(dir, "mem")}, `mem": want a .csv or .svg file`},
		{[]string{"--sample", "1s", "-o", ".csv"}, `-o ".csv": want a file name`},
		{[]string{"--sample", "1s", "-o", csvFile, "--duration", "-1s"}, "--duration -1s: must not be negative"},
		{[]string{"--sample", "1s", "-o", csvFile, "--json"}, "--json and --sample conflict"},
		{[]string{"-o", csvFile}, "-o and --duration need --sample INTERVAL"},
		{[]string{"--duration", "1m"}, "-o and --duration need --sample INTERVAL"},
	} {
		_, stderr, err := execute(append([]string{"memory"}, tc.args...)...)
		if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want ErrInvalidArgument with %q", tc.args, err, tc.want)
			continue
		}
		if !strings.HasPrefix(stderr, "atoll: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: stderr %q", tc.args, stderr)
		}
	}
	if _, _, err := execute("memory", "--sample", "fast", "-o", csvFile); err == nil || !strings.Contains(err.Error(), `invalid argument "fast" for "--sample"`) {
		t.Errorf("--sample fast: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad flags wrote files: %v", entries)
	}
}

func TestSampleOutputs(t *testing.T) {
	for file, want := range map[string][]sampleOutput{
		"mem.csv":      {{"mem.csv", false}, {"mem.svg", true}},
		"d/mem.CSV":    {{"d/mem.CSV", false}, {"d/mem.svg", true}},
		"d/x.y.svg":    {{"d/x.y.svg", true}},
		"/tmp/mem.svg": {{"/tmp/mem.svg", true}},
	} {
		got, err := sampleOutputs(file)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", file, got, err, want)
		}
	}
}

// `atoll memory --sample 50ms --duration 1s -o FILE.csv` against a head
// running in this process writes the CSV and the SVG next to it.
func TestMemorySampleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	isolate(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	head, err := node.Start(ctx, nodeconfig.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: nodeconfig.NoCPUs, ObjectStoreMemory: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = head.Stop(context.Background()) })
	t.Setenv(nodeconfig.EnvSecret, head.Secret()) // the CLI reads the secret of a head started by the Go API here
	out := filepath.Join(t.TempDir(), "mem.csv")
	stdout, stderr, err := execute("memory", "--address", head.Address(), "--sample", "50ms", "--duration", "1s", "-o", out)
	if err != nil {
		t.Fatalf("memory --sample: %v\n%s%s", err, stdout, stderr)
	}
	short := head.ID().Short()
	for _, want := range []string{
		`(?m)^sampling the object stores of 1 node of cluster \S+ every 50ms; writing \S+mem.csv and \S+mem.svg after 1s \(or Ctrl-C\)$`,
		`(?m)^wrote \d+ samples of 1 node to \S+mem.csv and \S+mem.svg; peak cluster total \S+ at \d+\.\ds$`,
	} {
		if !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("stderr does not match %q:\n%s", want, stderr)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) < 3 {
		t.Fatalf("CSV: %d records, %v\n%s", len(recs), err, data)
	}
	if want := []string{"seconds", short + " (head)", "total"}; !slices.Equal(recs[0], want) {
		t.Errorf("CSV header %q, want %q", recs[0], want)
	}
	if recs[1][0] != "0.000" || recs[1][1] == "" || recs[1][1] != recs[1][2] {
		t.Errorf("first CSV line %q", recs[1])
	}

	svg, err := os.ReadFile(strings.TrimSuffix(out, ".csv") + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var paths int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not XML: %v", err)
		}
		if e, ok := tok.(xml.StartElement); ok && e.Name.Local == "path" {
			paths++
		}
	}
	if paths != 2 || !bytes.Contains(svg, []byte(short+" (head) peak ")) {
		t.Errorf("SVG: %d paths, want the head's and the total's\n%s", paths, svg)
	}
}
