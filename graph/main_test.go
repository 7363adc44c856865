package graph_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// start runs atoll for one test with worker processes (the graph's tasks
// and task callbacks run in them) and a small object store.
func start(t *testing.T, opts ...atoll.Option) context.Context { return testmain.Start(t, opts...) }

// A counter of executions that works across worker processes: each
// counted call appends a line to a file (O_APPEND writes of one short
// line are atomic).

func countLine(dir, what string) error {
	f, err := os.OpenFile(filepath.Join(dir, "count"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %d\n", what, os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// counted returns the lines countLine wrote in dir.
func counted(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "count"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, strings.TrimSpace(s.Text()))
	}
	return lines
}
