package graph

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
)

// ProgressBar is a Callback that draws the tasks done out of the tasks
// submitted on a terminal line, like Dask's ProgressBar:
//
//	[##########          ] |  50% Completed | 5000/10000 tasks | 1.2s
//
// The run tells it as tasks finish (it waits on the submitted refs on a
// goroutine of its own, no polling of the tasks); it redraws at most once
// per Interval and draws the last line at Finish. Use one ProgressBar per
// run at a time.
type ProgressBar struct {
	NopCallback
	// Out is where the bar is drawn; nil means os.Stderr.
	Out io.Writer
	// Interval is the least time between redraws; 0 means 100 ms.
	Interval time.Duration
	// Width is the bar's width in characters; 0 means 40.
	Width int

	mu       sync.Mutex // guards the fields below
	start    time.Time
	total    int
	done     int
	lastDraw time.Time
}

// NewProgressBar returns a progress bar drawn on w (os.Stderr if nil).
func NewProgressBar(w io.Writer) *ProgressBar { return &ProgressBar{Out: w} }

// PostSubmitAll starts the bar.
func (p *ProgressBar) PostSubmitAll(refs map[Key]atoll.Ref) {
	p.mu.Lock()
	p.start, p.total, p.done, p.lastDraw = time.Now(), len(refs), 0, time.Time{}
	p.mu.Unlock()
}

// tasksDone implements progressObserver.
func (p *ProgressBar) tasksDone(n int) {
	interval := p.Interval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	p.mu.Lock()
	p.done += n
	redraw := time.Since(p.lastDraw) >= interval
	if redraw {
		p.lastDraw = time.Now()
	}
	p.mu.Unlock()
	if redraw {
		p.draw(false)
	}
}

// Finish draws the last line.
func (p *ProgressBar) Finish(error) { p.draw(true) }

func (p *ProgressBar) draw(last bool) {
	p.mu.Lock()
	done, total, start := p.done, p.total, p.start
	p.mu.Unlock()
	width := p.Width
	if width <= 0 {
		width = 40
	}
	frac := 1.0
	if total > 0 {
		frac = min(1, float64(done)/float64(total))
	}
	fill := int(frac * float64(width))
	line := fmt.Sprintf("\r[%s%s] | %3.0f%% Completed | %d/%d tasks | %.1fs", strings.Repeat("#", fill),
		strings.Repeat(" ", width-fill), 100*frac, done, total, time.Since(start).Seconds())
	if last {
		line += "\n"
	}
	out := p.Out
	if out == nil {
		out = os.Stderr
	}
	_, _ = io.WriteString(out, line)
}

// The result cache: a task callback that, in the worker, stores the
// results of chosen keys in a directory, one file per content hash; and a
// driver callback whose PreSubmit reads them back, so a later run of the
// same graph (the same expressions on the same inputs) skips those tasks
// and what only they needed.

const cacheCallback = "atoll/graph.cache"

func init() { RegisterTaskCallback(cacheCallback, fileCache{}) }

// WithResultCache caches the results of keys (every task's, if none are
// given) in dir, a directory every worker can write. Keys that fusion
// folds into another task are not cached on their own: choose requested
// keys, or turn fusion off. Results are keyed by the content hash of the
// task (TaskInfo.Hash), so a changed function body is not noticed: clear
// the directory when code changes.
func WithResultCache(dir string, keys ...Key) Option {
	rc := &cacheReader{dir: dir}
	if len(keys) > 0 {
		rc.keys = map[Key]bool{}
		for _, k := range keys {
			rc.keys[k] = true
		}
	}
	return func(o *options) {
		WithTaskCallback(cacheCallback, dir, keys...)(o)
		WithCallbacks(rc)(o)
	}
}

type fileCache struct{}

func (fileCache) PreTask(context.Context, TaskInfo) any { return nil }

func (fileCache) PostTask(_ context.Context, t TaskInfo, result any, _ any) {
	if err := writeCached(t.Param, t.Hash, result); err != nil {
		slog.Warn("graph: result cache: write failed", "key", t.Key, "err", err)
	}
}

func writeCached(dir, hash string, result any) error {
	enc, err := codec.Encode(result)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, hash+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(append([]byte{byte(enc.Codec)}, enc.Data...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, hash))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

type cacheReader struct {
	NopCallback
	dir  string
	keys map[Key]bool
}

func (c *cacheReader) PreSubmit(key Key, s Submission) (any, bool) {
	if c.keys != nil && !c.keys[key] {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(c.dir, s.Hash))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	v, err := codec.DecodeType(atollpb.Codec(b[0]), b[1:], s.Type)
	if err != nil {
		slog.Warn("graph: result cache: unreadable entry", "key", key, "err", err)
		return nil, false
	}
	return v.Interface(), true
}
