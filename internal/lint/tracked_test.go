package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxTrackedFile bounds the size of any file tracked by git: build outputs
// and generated data never go into the repository.
const maxTrackedFile = 1 << 20

// TestNoBinariesTracked fails if git tracks a compiled binary (an ELF
// file) or any file over maxTrackedFile.
func TestNoBinariesTracked(t *testing.T) {
	root, _ := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err) // a source tarball has nothing tracked
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		path := filepath.Join(root, string(name))
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		if st.Size() > maxTrackedFile {
			t.Errorf("%s: %d bytes tracked by git (limit %d): generated data and build outputs belong in .gitignore", name, st.Size(), maxTrackedFile)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			continue
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		if n == 4 && bytes.Equal(head, []byte("\x7fELF")) {
			t.Errorf("%s: a compiled binary is tracked by git", name)
		}
	}
}
