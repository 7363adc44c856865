package pss

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// Tree returns root followed by all its descendants (children, their
// children, ...), found by reading the parent pid of every process in
// /proc. The list is a snapshot: processes may start or exit right after.
// It fails with an error matching os.ErrNotExist when root does not exist.
func Tree(root int) ([]int, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("pss: %w", err)
	}
	if _, err := fs.Proc(root); err != nil {
		return nil, fmt.Errorf("pss: %w", err)
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("pss: %w", err)
	}
	children := make(map[int][]int)
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited while we were walking
		}
		children[st.PPID] = append(children[st.PPID], p.PID)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out, nil
}
