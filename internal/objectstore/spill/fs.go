package spill

import (
	"io"
	"os"
)

// File is an open spill file: written once, sequentially, by WriteFile;
// read at offsets by ReadAt. Files of FS.Create are open for both, so a
// spill file can be read through the descriptor it was written with after
// its name is gone.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
}

// FS is the file system a Local target works on. Its methods behave like
// their namesakes in package os.
type FS interface {
	// Create creates a new file for writing and reading; it fails if
	// name exists.
	Create(name string) (File, error)
	// Open opens an existing file for reading.
	Open(name string) (File, error)
	// Remove deletes a file.
	Remove(name string) error
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(dir string) error
}

// OS is the operating system's file system. Files are created with mode
// 0600 and directories with mode 0700: spilled objects are the node's
// private data.
var OS FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

func (osFS) Open(name string) (File, error) { return os.Open(name) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o700) }
