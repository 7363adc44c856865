package jobs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Bounds on what `atoll job submit` ships to a node: whoever holds the
// cluster secret may send these, so each is capped.
const (
	// MaxBinaryBytes is the largest driver binary a node accepts.
	MaxBinaryBytes = 512 << 20
	// MaxWorkingDirBytes bounds a working directory: its compressed
	// archive, and the bytes it extracts to.
	MaxWorkingDirBytes = 64 << 20
	// maxWorkingDirFiles bounds the entries of a working directory.
	maxWorkingDirFiles = 10000
	// ChunkBytes is the size of an upload's chunks (under NATS's
	// 1 MiB default payload).
	ChunkBytes = 512 << 10
	// maxUploads bounds the uploads a node holds half-received at once;
	// one idle for uploadIdle is dropped.
	maxUploads = 8
	uploadIdle = 2 * time.Minute
	// maxJobNameLen bounds a binary's base name.
	maxJobNameLen = 255
)

// jobBinDir holds the binaries of submitted jobs, content-addressed
// (<sha256>/<name>), in StateDir: every node on a machine shares it, so a
// binary is stored once per machine and has the same path on each node,
// the path worker processes run (TaskSpec.worker_binary).
func jobBinDir() string { return filepath.Join(nodeconfig.StateDir(), "jobs", "bin") }

// jobBinaryPath is where a binary with sum and name is installed.
func jobBinaryPath(sum []byte, name string) string {
	return filepath.Join(jobBinDir(), hex.EncodeToString(sum), name)
}

// upload is a file being received, chunk by chunk, in order.
type upload struct {
	kind     atollpb.JobFileKind
	sum      []byte
	size     uint64
	name     string
	file     *os.File // the partial file (in the node's jobs dir)
	received uint64
	hash     hash.Hash
	last     time.Time
}

func (u *upload) key() string { return u.kind.String() + "/" + hex.EncodeToString(u.sum) }

func (u *upload) abort() {
	if u.file != nil {
		_ = u.file.Close()
		_ = os.Remove(u.file.Name())
	}
}

// checkUpload validates a chunk's header.
func checkUpload(req *atollpb.JobUpload) error {
	if len(req.Sha256) != sha256.Size {
		return errs.Invalidf("job upload: want a 32-byte SHA-256, got %d bytes", len(req.Sha256))
	}
	switch req.Kind {
	case atollpb.JobFileKind_JOB_FILE_BINARY:
		if req.Size == 0 || req.Size > MaxBinaryBytes {
			return errs.Invalidf("job upload: a binary of %s (at most %s)", sizeText(req.Size), sizeText(MaxBinaryBytes))
		}
		if err := checkBinaryName(req.Name); err != nil {
			return err
		}
	case atollpb.JobFileKind_JOB_FILE_WORKING_DIR:
		if req.Size == 0 || req.Size > MaxWorkingDirBytes {
			return errs.Invalidf("job upload: a working directory archive of %s (at most %s)", sizeText(req.Size), sizeText(MaxWorkingDirBytes))
		}
	default:
		return errs.Invalidf("job upload: unknown kind %v", req.Kind)
	}
	if len(req.Data) > ChunkBytes || req.Offset > req.Size || uint64(len(req.Data)) > req.Size-req.Offset {
		return errs.Invalidf("job upload: chunk of %d bytes at %d does not fit a file of %d bytes in chunks of at most %d",
			len(req.Data), req.Offset, req.Size, ChunkBytes)
	}
	return nil
}

// checkBinaryName accepts a plain file name.
func checkBinaryName(name string) error {
	if name == "" || len(name) > maxJobNameLen || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return errs.Invalidf("job binary name %q: want a file name without '/'", name)
	}
	return nil
}

// installedFile returns the path of a complete file the node holds for
// kind and sum ("" if none).
func (s *jobService) installedFile(kind atollpb.JobFileKind, sum []byte, name string) string {
	var path string
	switch kind {
	case atollpb.JobFileKind_JOB_FILE_BINARY:
		path = jobBinaryPath(sum, name)
	case atollpb.JobFileKind_JOB_FILE_WORKING_DIR:
		path = filepath.Join(s.dir, "workdirs", hex.EncodeToString(sum)+".tar.gz")
	default:
		return ""
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		if kind == atollpb.JobFileKind_JOB_FILE_BINARY {
			touchBinary(path, time.Now())
		}
		return path
	}
	return ""
}

// receive takes one chunk; it returns the reply. Only the job service's
// actor calls it.
func (s *jobService) receive(req *atollpb.JobUpload, now time.Time) *atollpb.JobUploadReply {
	if err := checkUpload(req); err != nil {
		return &atollpb.JobUploadReply{Error: errs.ToProto(err)}
	}
	for k, u := range s.uploads { // drop abandoned uploads
		if now.Sub(u.last) > uploadIdle {
			u.abort()
			delete(s.uploads, k)
		}
	}
	if path := s.installedFile(req.Kind, req.Sha256, req.Name); path != "" {
		return &atollpb.JobUploadReply{Complete: true, Received: req.Size}
	}
	k := (&upload{kind: req.Kind, sum: req.Sha256}).key()
	u := s.uploads[k]
	if req.Offset == 0 && len(req.Data) == 0 {
		if u != nil {
			return &atollpb.JobUploadReply{Received: u.received}
		}
		return &atollpb.JobUploadReply{}
	}
	if req.Offset == 0 && u != nil { // the sender starts over
		u.abort()
		delete(s.uploads, k)
		u = nil
	}
	if u == nil {
		if req.Offset != 0 {
			return &atollpb.JobUploadReply{Error: errs.ToProto(errs.Invalidf("job upload: chunk at %d of a file this node is not receiving (start at 0)", req.Offset))}
		}
		if len(s.uploads) >= maxUploads {
			return &atollpb.JobUploadReply{Error: errs.ToProto(errs.Exhaustedf("job upload: node %s is receiving %d files already", s.cfg.NodeID.Short(), maxUploads))}
		}
		if err := os.MkdirAll(filepath.Join(s.dir, "uploads"), 0o700); err != nil {
			return &atollpb.JobUploadReply{Error: errs.ToProto(errs.Unavailablef("job upload: %v", err))}
		}
		f, err := os.CreateTemp(filepath.Join(s.dir, "uploads"), "upload-*")
		if err != nil {
			return &atollpb.JobUploadReply{Error: errs.ToProto(errs.Unavailablef("job upload: %v", err))}
		}
		u = &upload{kind: req.Kind, sum: req.Sha256, size: req.Size, name: req.Name, file: f, hash: sha256.New()}
		s.uploads[k] = u
	}
	if req.Offset != u.received || req.Size != u.size || req.Name != u.name {
		return &atollpb.JobUploadReply{Received: u.received, Error: errs.ToProto(errs.Invalidf("job upload: chunk at %d, want %d", req.Offset, u.received))}
	}
	u.last = now
	if _, err := u.file.Write(req.Data); err != nil {
		u.abort()
		delete(s.uploads, k)
		return &atollpb.JobUploadReply{Error: errs.ToProto(errs.Unavailablef("job upload: %v", err))}
	}
	u.hash.Write(req.Data)
	u.received += uint64(len(req.Data))
	if u.received < u.size {
		return &atollpb.JobUploadReply{Received: u.received}
	}
	delete(s.uploads, k)
	if err := s.install(u); err != nil {
		u.abort()
		s.log.Warn("job upload refused", "kind", u.kind.String(), "err", err)
		return &atollpb.JobUploadReply{Error: errs.ToProto(err)}
	}
	if u.kind == atollpb.JobFileKind_JOB_FILE_BINARY {
		touchBinary(jobBinaryPath(u.sum, u.name), now)
		s.pruneAfterInstall()
	}
	return &atollpb.JobUploadReply{Complete: true, Received: u.received}
}

// install checks a received file's hash and moves it to its place.
func (s *jobService) install(u *upload) error {
	if got := u.hash.Sum(nil); !bytes.Equal(got, u.sum) {
		return errs.Invalidf("job upload: the file's SHA-256 is %x…, announced %x…", got[:6], u.sum[:6])
	}
	var dst string
	mode := os.FileMode(0o600)
	switch u.kind {
	case atollpb.JobFileKind_JOB_FILE_BINARY:
		dst, mode = jobBinaryPath(u.sum, u.name), 0o700
		if err := nodeconfig.MakeStateDir(); err != nil {
			return errs.Unavailablef("job upload: %v", err)
		}
	default:
		dst = filepath.Join(s.dir, "workdirs", hex.EncodeToString(u.sum)+".tar.gz")
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return errs.Unavailablef("job upload: %v", err)
	}
	if err := u.file.Chmod(mode); err != nil {
		return errs.Unavailablef("job upload: %v", err)
	}
	if err := u.file.Close(); err != nil {
		return errs.Unavailablef("job upload: %v", err)
	}
	// Atomic: another node on this machine may install the same binary.
	if err := os.Rename(u.file.Name(), dst); err != nil {
		return errs.Unavailablef("job upload: %v", err)
	}
	u.file = nil
	return nil
}

// extractWorkingDir unpacks a working directory archive into dir:
// directories and regular files only, relative paths that stay inside
// dir, at most MaxWorkingDirBytes and maxWorkingDirFiles in all.
func extractWorkingDir(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return errs.Invalidf("working directory: not a gzip archive: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errs.Invalidf("working directory: bad tar archive: %v", err)
		}
		if n >= maxWorkingDirFiles {
			return errs.Invalidf("working directory: more than %d entries", maxWorkingDirFiles)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return errs.Invalidf("working directory: entry %q leaves the directory", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if h.Size < 0 || total > MaxWorkingDirBytes {
				return errs.Invalidf("working directory: more than %s", sizeText(MaxWorkingDirBytes))
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return err
			}
			out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, h.FileInfo().Mode().Perm()&0o700|0o600)
			if err != nil {
				return err
			}
			_, err = io.CopyN(out, tr, h.Size)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("working directory: %s: %w", h.Name, err)
			}
		default:
			return errs.Invalidf("working directory: entry %q is not a file or a directory", h.Name)
		}
	}
}

// ArchiveDir packs dir (directories and regular files; symbolic links
// and other files are left out) into the gzip-compressed tar archive
// Submission.WorkingDir takes, failing past MaxWorkingDirBytes of
// files or of archive.
func ArchiveDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	var total int64
	files := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		if files++; files > maxWorkingDirFiles {
			return errs.Invalidf("working directory %s: more than %d entries", dir, maxWorkingDirFiles)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if total += fi.Size(); total > MaxWorkingDirBytes {
			return errs.Invalidf("working directory %s: more than %s", dir, sizeText(MaxWorkingDirBytes))
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, fi.Size())
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, err
	}
	if buf.Len() > MaxWorkingDirBytes {
		return nil, errs.Invalidf("working directory %s: an archive of %s, at most %s", dir, sizeText(buf.Len()), sizeText(MaxWorkingDirBytes))
	}
	return buf.Bytes(), nil
}

// sizeText renders a byte count for messages ("44.1 MiB").
func sizeText[N int | int64 | uint64](n N) string { return benchfmt.HumanSize(uint64(max(n, 0))) }
