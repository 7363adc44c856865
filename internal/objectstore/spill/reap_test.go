package spill

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func writeOne(t *testing.T, l *Local, data string) string {
	t.Helper()
	name, err := l.WriteFile(func(w io.Writer) error { _, err := io.WriteString(w, data); return err })
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestDeadInstanceFilesAreReaped: the files of an instance whose process
// died (killed: the kernel dropped its locks) are
// removed by the next NewLocal on the directory; a live instance's are not.
func TestDeadInstanceFilesAreReaped(t *testing.T) {
	named := LocalOptions{MaxUnlinked: -1} // files keep their names
	if dir := os.Getenv("SPILL_REAP_CHILD"); dir != "" {
		l, err := NewLocal([]string{dir}, named)
		if err != nil {
			os.Exit(2)
		}
		fmt.Println(writeOne(t, l, "left"))
		fmt.Println(writeOne(t, l, "behind"))
		select {} // until killed
	}
	dir := t.TempDir()
	live, err := NewLocal([]string{dir}, named)
	if err != nil {
		t.Fatal(err)
	}
	liveFile := writeOne(t, live, "alive")
	// Another process writes two files and is killed: the kernel drops its
	// locks, the files stay.
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeadInstanceFilesAreReaped$")
	cmd.Env = append(os.Environ(), "SPILL_REAP_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var deadFiles []string
	sc := bufio.NewScanner(out)
	for len(deadFiles) < 2 && sc.Scan() {
		deadFiles = append(deadFiles, sc.Text())
	}
	if len(deadFiles) != 2 {
		_ = cmd.Process.Kill()
		t.Fatalf("child wrote %v", deadFiles)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	next, err := NewLocal([]string{dir}, named)
	if err != nil {
		t.Fatal(err)
	}
	if next.Reaped.Files != 2 || next.Reaped.Bytes != int64(len("left")+len("behind")) {
		t.Fatalf("Reaped = %+v, want 2 files of 10 bytes", next.Reaped)
	}
	names := entries(t, dir)
	for _, f := range deadFiles {
		if slices.Contains(names, filepath.Base(f)) {
			t.Fatalf("dead instance's %s survived: %v", f, names)
		}
	}
	if !slices.Contains(names, filepath.Base(liveFile)) {
		t.Fatalf("live instance's file was reaped: %v", names)
	}

	// Close removes an instance's own files and lock and nothing else.
	nextFile := writeOne(t, next, "mine")
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	names = entries(t, dir)
	if slices.Contains(names, filepath.Base(liveFile)) || !slices.Contains(names, filepath.Base(nextFile)) {
		t.Fatalf("after Close of one instance: %v", names)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Fatalf("after closing every instance the directory holds %v", names)
	}
}
