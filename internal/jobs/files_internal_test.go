package jobs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// testJobService is a job service with no actor or NATS behind it: its
// upload handling on its own.
func testJobService(t *testing.T) *jobService {
	t.Setenv("TMPDIR", t.TempDir()) // jobBinDir is in StateDir
	return &jobService{cfg: Config{NodeID: ids.NewNodeID()}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		dir: t.TempDir(), uploads: map[string]*upload{}, jobs: map[ids.JobID]*nodeJob{}}
}

func replyErr(r *atollpb.JobUploadReply) error { return errs.FromProto(r.Error) }

// TestJobUpload: a binary arrives in order, chunk by chunk, is checked
// against its hash and installed content-addressed; chunks out of order,
// a wrong hash, bad names and sizes, and too many uploads at once are
// refused with typed errors.
func TestJobUpload(t *testing.T) {
	s := testJobService(t)
	data := bytes.Repeat([]byte("atoll!"), ChunkBytes/4) // 1.5 chunks
	sum := sha256.Sum256(data)
	hdr := &atollpb.JobUpload{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: uint64(len(data)), Name: "prog"}
	chunk := func(off int, b []byte) *atollpb.JobUpload {
		c := proto.CloneOf(hdr)
		c.Offset, c.Data = uint64(off), b
		return c
	}
	now := time.Now()
	if r := s.receive(chunk(0, nil), now); r.Error != nil || r.Complete {
		t.Fatalf("probe of a new file: %+v", r)
	}
	if r := s.receive(chunk(0, data[:ChunkBytes]), now); r.Error != nil || r.Complete || r.Received != ChunkBytes {
		t.Fatalf("first chunk: %+v", r)
	}
	if r := s.receive(chunk(ChunkBytes+1, data[ChunkBytes+1:]), now); !errors.Is(replyErr(r), errs.ErrInvalidArgument) {
		t.Errorf("a chunk out of order: %+v, want ErrInvalidArgument", r)
	}
	if r := s.receive(chunk(ChunkBytes, data[ChunkBytes:]), now); r.Error != nil || !r.Complete {
		t.Fatalf("last chunk: %+v", r)
	}
	path := jobBinaryPath(sum[:], "prog")
	got, err := os.ReadFile(path)
	if fi, serr := os.Stat(path); err != nil || serr != nil || !bytes.Equal(got, data) || fi.Mode().Perm() != 0o700 {
		t.Fatalf("installed binary %s: %v %v", path, err, serr)
	}
	if r := s.receive(chunk(0, nil), now); r.Error != nil || !r.Complete {
		t.Errorf("probe of an installed file: %+v, want complete", r)
	}

	// A file whose bytes do not match the announced hash is not installed.
	bad := append([]byte(nil), data...)
	bad[0] ^= 1
	badHdr := proto.CloneOf(hdr)
	badHdr.Name = "other"
	badHdr.Sha256 = make([]byte, sha256.Size)
	badHdr.Data = bad[:ChunkBytes]
	if r := s.receive(badHdr, now); r.Error != nil {
		t.Fatal(r)
	}
	badHdr.Offset, badHdr.Data = ChunkBytes, bad[ChunkBytes:]
	if r := s.receive(badHdr, now); !errors.Is(replyErr(r), errs.ErrInvalidArgument) {
		t.Errorf("a file with the wrong hash: %+v, want ErrInvalidArgument", r)
	}
	if _, err := os.Stat(jobBinaryPath(badHdr.Sha256, "other")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file with the wrong hash was installed: %v", err)
	}

	for _, h := range []*atollpb.JobUpload{
		{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: 10, Name: "../x"},
		{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: 10, Name: ""},
		{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:3], Size: 10, Name: "x"},
		{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: MaxBinaryBytes + 1, Name: "x"},
		{Kind: atollpb.JobFileKind_JOB_FILE_WORKING_DIR, Sha256: sum[:], Size: MaxWorkingDirBytes + 1},
		{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: 10, Name: "x", Offset: 8, Data: []byte("abc")},
		{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: 1 << 30, Name: "x", Data: make([]byte, ChunkBytes+1)},
		{Sha256: sum[:], Size: 10, Name: "x"},
	} {
		if r := s.receive(h, now); !errors.Is(replyErr(r), errs.ErrInvalidArgument) {
			t.Errorf("%v: %+v, want ErrInvalidArgument", h, r)
		}
	}

	// At most maxUploads half-received files; an idle one is dropped.
	for i := range maxUploads + 1 {
		d := []byte{byte(i), 1, 2}
		sum := sha256.Sum256(d)
		r := s.receive(&atollpb.JobUpload{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: sum[:], Size: 4, Name: "p", Data: d}, now)
		if i < maxUploads && r.Error != nil {
			t.Fatalf("upload %d: %+v", i, r)
		}
		if i == maxUploads && !errors.Is(replyErr(r), errs.ErrResourceExhausted) {
			t.Errorf("upload %d past the bound: %+v, want ErrResourceExhausted", i, r)
		}
	}
	d := []byte("late")
	lsum := sha256.Sum256(d)
	if r := s.receive(&atollpb.JobUpload{Kind: atollpb.JobFileKind_JOB_FILE_BINARY, Sha256: lsum[:], Size: 5, Name: "p", Data: d}, now.Add(uploadIdle+time.Second)); r.Error != nil {
		t.Errorf("an upload once the idle ones expired: %+v", r)
	}
	if len(s.uploads) != 1 {
		t.Errorf("%d uploads held, want the idle ones dropped", len(s.uploads))
	}
}

// TestWorkingDir: ArchiveDir packs files and directories (not links);
// extractWorkingDir unpacks them and refuses entries that leave the
// directory or are not files or directories.
func TestWorkingDir(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "b", "data.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	archive, err := ArchiveDir(src)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "wd.tar.gz")
	if err := os.WriteFile(file, archive, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := extractWorkingDir(file, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "a", "b", "data.txt")); err != nil || string(b) != "hello" {
		t.Errorf("extracted file: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a symbolic link was packed: %v", err)
	}

	for name, h := range map[string]*tar.Header{
		"parent":   {Name: "../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o600},
		"absolute": {Name: "/tmp/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o600},
		"symlink":  {Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"},
		"too big":  {Name: "big", Typeflag: tar.TypeReg, Size: MaxWorkingDirBytes + 1, Mode: 0o600},
	} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		_ = tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg && h.Size == 1 {
			_, _ = tw.Write([]byte("x"))
		}
		_ = tw.Flush()
		_ = zw.Close()
		if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := extractWorkingDir(file, t.TempDir()); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("%s entry: %v, want ErrInvalidArgument", name, err)
		}
	}
	if err := os.WriteFile(file, []byte("not gzip"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := extractWorkingDir(file, t.TempDir()); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("not an archive: %v, want ErrInvalidArgument", err)
	}
}
