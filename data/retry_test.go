package data_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// flakyFile is a file the test serves through named pipes: each read
// attempt, opening the path, gets the next of contents (the last one
// again and again), as a file that a read sees half written, then whole.
// A writer's open blocks until a reader opened the pipe; before writing,
// the server puts a new pipe at the path, so the next attempt opens that
// one and this attempt's reader sees its end of file when its writer
// closes: each attempt reads exactly one content, with no timing.
type flakyFile struct {
	path, pipes string // the file; where new pipes are made
	contents    []string
	served      atomic.Int32 // attempts that got a content
	err         atomic.Value // the server's error
	stop, done  chan struct{}
}

func serveFlaky(t *testing.T, path string, contents ...string) *flakyFile {
	t.Helper()
	f := &flakyFile{path: path, pipes: t.TempDir(), contents: contents, stop: make(chan struct{}), done: make(chan struct{})}
	if err := f.newPipe(0); err != nil {
		t.Fatal(err)
	}
	go f.serve()
	t.Cleanup(func() {
		close(f.stop)
		// a reader of our own unblocks the server's open; it stays open
		// until the server is gone, so the open cannot miss it
		r, err := os.OpenFile(f.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Errorf("open %s: %v", f.path, err)
			return
		}
		<-f.done
		_ = r.Close()
		if err, ok := f.err.Load().(error); ok {
			t.Errorf("serving %s: %v", f.path, err)
		}
	})
	return f
}

// newPipe makes pipe i and puts it at the path.
func (f *flakyFile) newPipe(i int) error {
	p := filepath.Join(f.pipes, fmt.Sprint("pipe", i))
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		return fmt.Errorf("mkfifo %s: %w", p, err)
	}
	return os.Rename(p, f.path)
}

func (f *flakyFile) serve() {
	defer close(f.done)
	for i := 0; ; i++ {
		w, err := os.OpenFile(f.path, os.O_WRONLY, 0) // until an attempt opens it
		if err != nil {
			f.err.Store(err)
			return
		}
		select {
		case <-f.stop:
			_ = w.Close()
			return
		default:
		}
		if err := f.newPipe(i + 1); err != nil {
			_ = w.Close()
			f.err.Store(err)
			return
		}
		_, err = w.WriteString(f.contents[min(i, len(f.contents)-1)])
		f.served.Add(1) // before the close: the attempt cannot end before it
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			f.err.Store(err)
			return
		}
	}
}

// csvDir writes a.csv (ids 0-2) and c.csv (ids 6-8) in a new directory
// and returns it and the path of b.csv (ids 3-5), left to the test.
func csvDir(t *testing.T) (dir, b string) {
	t.Helper()
	dir = t.TempDir()
	for name, lo := range map[string]int{"a.csv": 0, "c.csv": 6} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(csvRows(lo, 3)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "b.csv")
}

// csvRows is a CSV file of ids lo to lo+n-1 with a name each.
func csvRows(lo, n int) string {
	var b strings.Builder
	b.WriteString("id,name\n")
	for i := lo; i < lo+n; i++ {
		fmt.Fprintf(&b, "%d,n%d\n", i, i)
	}
	return b.String()
}

// halfWritten is b.csv cut in its third line, as a reader sees a file
// its writer has not finished: the CSV reader fails on it.
var halfWritten = csvRows(3, 3)[:len("id,name\n3,n3\n4")]

// TestReadRetried: a read task whose file is half written on its first
// attempt is retried (reads retry a file error that may pass, which this
// test binary takes a half-written CSV line for) and reads it whole:
// the dataset has every row once, in order, and Stats counts the retry.
// (The driver reads the file's head first, to infer the columns: it is
// served the whole file.)
func TestReadRetried(t *testing.T) {
	ctx := start(t)
	dir, b := csvDir(t)
	f := serveFlaky(t, b, csvRows(3, 3), halfWritten, csvRows(3, 3))
	ds := data.ReadCSV(dir)
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, rows, "id"); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("ids %v", got)
	}
	for _, r := range rows {
		if r["name"] != fmt.Sprint("n", r["id"]) {
			t.Fatalf("row %v", r)
		}
	}
	if n := f.served.Load(); n != 3 {
		t.Fatalf("b.csv was read %d times, want 3 (its head, then half written, then whole)", n)
	}
	if st := ds.Stats(); !strings.Contains(st, "* Retried: 1 tasks after 1 failed attempts\n") {
		t.Fatalf("Stats do not count the retry:\n%s", st)
	} else {
		t.Logf("Stats:\n%s", st)
	}
}

// TestReadFailsAfterRetries: a read that fails on every attempt is tried
// four times (three retries), then fails the run with the last attempt's
// error, which names the file and says it was the last attempt.
func TestReadFailsAfterRetries(t *testing.T) {
	ctx := start(t)
	dir, b := csvDir(t)
	f := serveFlaky(t, b, csvRows(3, 3), halfWritten) // its head for the driver, then half written
	_, err := data.ReadCSV(dir).Count(ctx)
	var te *atoll.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("Count: %v, want a TaskError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "data: read "+b+": ") || !strings.Contains(msg, "wrong number of fields") ||
		!strings.HasSuffix(msg, "(attempt 4 of 4)") {
		t.Fatalf("error %q does not name the file, the cause and the last attempt", msg)
	}
	var fe *data.FileError
	if !errors.As(err, &fe) || fe.Op != "read" || fe.Path != b || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v: FileError %+v", err, fe)
	}
	if n := f.served.Load(); n != 5 {
		t.Fatalf("b.csv was read %d times, want 5 (its head, a try and three retries)", n)
	}
	t.Log(err)
}

// TestReadStageErrorsAreFinal: a read task's error that cannot pass by
// trying again fails the run at its first attempt: a registered function
// failing on the rows read (it ran four times before), and a file whose
// rows do not fit the read's schema. b.csv is served afresh to each
// open, which counts the attempts.
func TestReadStageErrorsAreFinal(t *testing.T) {
	ctx := start(t)
	only := t.TempDir() // b.csv alone: the function fails on every file's rows
	f := serveFlaky(t, filepath.Join(only, "b.csv"), csvRows(3, 3))
	_, err := data.ReadCSV(only).Map(failing).Count(ctx)
	var fe *data.FunctionError
	if !errors.As(err, &fe) || fe.Func != "test.fail" || errors.Is(err, data.ErrTransient) || strings.Contains(err.Error(), "attempt") {
		t.Fatalf("a failing function: %v", err)
	}
	if n := f.served.Load(); n != 2 {
		t.Fatalf("with a failing function, b.csv was read %d times, want 2 (its head, one try)", n)
	}
	// the driver infers int64 from the files' first MiB; past it, b.csv
	// has an id that does not parse
	dir, b := csvDir(t)
	head, _ := pastTheHead("id,name\n", "3,n3\n")
	f = serveFlaky(t, b, head+"three,n3\n")
	_, err = data.ReadCSV(dir).Count(ctx)
	var fileErr *data.FileError
	if !errors.As(err, &fileErr) || fileErr.Path != b || fileErr.Transient || strings.Contains(err.Error(), "attempt") {
		t.Fatalf("a file that does not fit the schema: %v", err)
	}
	if n := f.served.Load(); n != 2 {
		t.Fatalf("a file that does not fit the schema was read %d times, want 2 (its head, one try)", n)
	}
	t.Log(err)
}
