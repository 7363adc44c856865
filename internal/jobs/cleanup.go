package jobs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// BinariesDir is where the nodes of this machine keep the binaries of
// submitted jobs (content-addressed, shared by every node of the user).
func BinariesDir() string { return jobBinDir() }

// RemoveBinaries removes the binaries of submitted jobs kept on this
// machine, for `atoll stop` once no node runs here, and returns the bytes
// it freed. A missing directory frees nothing and is no error.
func RemoveBinaries() (int64, error) {
	dir := jobBinDir()
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	return size, nil
}
