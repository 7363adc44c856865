package spill

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// TestUnlinkedFiles: a spill file has no name once created; it is read
// through the descriptor the target keeps, and Remove closes it. Past the
// descriptor budget, files keep their names.
func TestUnlinkedFiles(t *testing.T) {
	dir := t.TempDir()
	tgt, err := NewLocal([]string{dir}, LocalOptions{MaxUnlinked: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	objs := testObjects(rand.New(rand.NewPCG(9, 10)), 5000, 3<<20, 70)
	var written []Written
	for range 3 {
		w, err := WriteBatch(tgt, objs)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, w)
	}
	if n := tgt.Unlinked(); n != 2 {
		t.Fatalf("%d unlinked files, want 2 (the budget)", n)
	}
	if files := spillFiles(t, dir); len(files) != 1 || files[0] != written[2].File {
		t.Fatalf("named files %v, want only the one past the budget (%s)", files, written[2].File)
	}
	for _, w := range written {
		if w.Size != FileSize(5000, 3<<20, 70) {
			t.Fatalf("file of %d bytes, FileSize says %d", w.Size, FileSize(5000, 3<<20, 70))
		}
		for i, e := range w.Extents {
			if e.Offset%Page != 0 {
				t.Fatalf("object at %d: not page-aligned", e.Offset)
			}
			dst := make([]byte, e.Length)
			if err := ReadObject(tgt, e, dst); err != nil || !bytes.Equal(dst, objs[i].Data) {
				t.Fatalf("object %d of %s: %v", i, w.File, err)
			}
		}
		if _, err := ReadIndex(tgt, w.File, w.Size); err != nil {
			t.Fatal(err)
		}
	}
	// Punching the middle object leaves its neighbours readable.
	mid := written[0].Extents[1]
	if err := tgt.Punch(mid.File, mid.Offset, PageAlign(mid.Length)); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		e := written[0].Extents[i]
		dst := make([]byte, e.Length)
		if err := ReadObject(tgt, e, dst); err != nil || !bytes.Equal(dst, objs[i].Data) {
			t.Fatalf("object %d after punching its neighbour: %v", i, err)
		}
	}
	if free, total, err := tgt.Space(); err != nil || total == 0 || free > total {
		t.Fatalf("Space() = %d, %d, %v", free, total, err)
	}
	for _, w := range written {
		if err := tgt.Remove(w.File); err != nil {
			t.Fatal(err)
		}
	}
	if n := tgt.Unlinked(); n != 0 || len(spillFiles(t, dir)) != 0 {
		t.Fatalf("after Remove: %d unlinked, files %v", n, spillFiles(t, dir))
	}
	// A budget freed by Remove is used again.
	w, err := WriteBatch(tgt, objs)
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Unlinked() != 1 || len(spillFiles(t, dir)) != 0 {
		t.Fatalf("after a new write: %d unlinked, files %v", tgt.Unlinked(), spillFiles(t, dir))
	}
	_ = tgt.Remove(w.File)
}

// TestKilledInstanceLeavesNothing: the files of a process killed with
// SIGKILL hold no name, so nothing of them is left for anyone to reap.
func TestKilledInstanceLeavesNothing(t *testing.T) {
	if dir := os.Getenv("SPILL_UNLINK_CHILD"); dir != "" {
		l, err := NewLocal([]string{dir}, LocalOptions{})
		if err != nil {
			os.Exit(2)
		}
		w, err := WriteBatch(l, testObjects(rand.New(rand.NewPCG(1, 1)), 1<<20))
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(w.File + "\n")
		select {} // until killed
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledInstanceLeavesNothing$")
	cmd.Env = append(os.Environ(), "SPILL_UNLINK_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		_ = cmd.Process.Kill()
		t.Fatalf("child wrote nothing: %v", cmd.Wait())
	}
	name := sc.Text()
	// While the child lives its file has no name already.
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		_ = cmd.Process.Kill()
		t.Fatalf("stat of a live instance's spill file: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if files := spillFiles(t, dir); len(files) != 0 {
		t.Fatalf("files left by a killed instance: %v", files)
	}
	next, err := NewLocal([]string{dir}, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if next.Reaped.Files != 0 {
		t.Fatalf("reaped %+v, want nothing", next.Reaped)
	}
}
