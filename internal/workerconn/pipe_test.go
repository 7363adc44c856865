package workerconn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// payloadFrame is a frame carrying n bytes of value v (an inline result).
func payloadFrame(i, n int) *atollpb.Frame {
	data := bytes.Repeat([]byte{byte(i)}, n)
	return &atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{Attempt: int32(i),
		Returns: []*atollpb.ReturnObject{{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: data}}}}}}}
}

func checkPayload(t *testing.T, f *atollpb.Frame, i, n int) {
	t.Helper()
	res := f.GetTaskResult()
	if res.GetAttempt() != int32(i) {
		t.Fatalf("frame %d arrived as %d", i, res.GetAttempt())
	}
	if got := res.GetReturns()[0].GetValue().GetInline(); !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, n)) {
		t.Fatalf("frame %d: payload changed after delivery", i)
	}
}

// The frames a pipe delivers share no memory with the buffers it reuses:
// frames kept by the handler stay intact while later bursts are written
// into the same buffers, and the buffers do come back to the writer.
func TestPipeFramesOutliveTheirBuffers(t *testing.T) {
	a, b := Pipe()
	var mu sync.Mutex
	var got []*atollpb.Frame
	recv := Open(b, func(f *atollpb.Frame) {
		mu.Lock()
		got = append(got, f)
		mu.Unlock()
	})
	send := Open(a, func(*atollpb.Frame) {})
	defer func() { send.Close(); recv.Close(); <-send.Done(); <-recv.Done() }()
	const n, size = 200, 1000
	for i := range n {
		if err := send.Send(payloadFrame(i, size)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 { // let the reader catch up, so buffers come back
			testutil.Eventually(t, "the reader to take the frames", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == i+1
			})
		}
	}
	for i, f := range got {
		checkPayload(t, f, i, size)
	}
	if st := send.Stats(); st.Frames != n || st.Writes > n {
		t.Fatalf("stats %+v after %d frames", st, n)
	}
	q := a.(*pipeEnd).out
	q.mu.Lock()
	free := len(q.free)
	q.mu.Unlock()
	send.wmu.Lock()
	spare := send.spare
	send.wmu.Unlock()
	if free == 0 && spare == nil {
		t.Fatal("no buffer came back to the writer")
	}
}

// A pipe end that closes: its peer reads every frame written before the
// close, then its connection ends with ErrClosed; writes to a closed end
// fail.
func TestPipeCloseDeliversWhatWasWritten(t *testing.T) {
	a, b := Pipe()
	var count int
	recv := Open(b, func(*atollpb.Frame) { count++ })
	send := Open(a, func(*atollpb.Frame) {})
	for i := range 100 {
		if err := send.Send(payloadFrame(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	send.Close()
	<-recv.Done()
	if count != 100 || recv.Err() != ErrClosed {
		t.Fatalf("%d of 100 frames, connection ended with %v", count, recv.Err())
	}
	if err := recv.Send(exitFrame("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("send to a closed peer: %v", err)
	}
}

// A writer waits while more than maxPending bytes of its frames are
// unread, and goes on once the reader reads.
func TestPipeBackpressure(t *testing.T) {
	a, b := Pipe()
	release := make(chan struct{})
	var once sync.Once
	frames := make(chan int, 64)
	recv := Open(b, func(f *atollpb.Frame) {
		<-release // the reader is stuck until the test lets it go
		frames <- int(f.GetTaskResult().GetAttempt())
	})
	send := Open(a, func(*atollpb.Frame) {})
	defer func() { once.Do(func() { close(release) }); send.Close(); recv.Close(); <-send.Done(); <-recv.Done() }()
	wrote := make(chan int, 64)
	go func() {
		for i := range 12 { // 12 MiB: past what the pipe holds unread
			if send.Send(payloadFrame(i, 1<<20)) != nil {
				return
			}
			wrote <- i
		}
	}()
	// The writer gets ahead of the stuck reader by a bounded amount only.
	var last int
	for {
		select {
		case last = <-wrote:
			continue
		case <-time.After(200 * time.Millisecond):
		}
		break
	}
	if last >= 11 {
		t.Fatalf("the writer wrote all 12 MiB to a stuck reader")
	}
	once.Do(func() { close(release) })
	for i := range 12 {
		if got := <-frames; got != i {
			t.Fatalf("frame %d arrived as %d", i, got)
		}
	}
}

// FuzzPipeChunk parses arbitrary bytes as a burst handed over a pipe. It
// must never panic; a burst of whole frames is read to its end, anything
// else ends with ErrBadFrame after the whole frames before it.
func FuzzPipeChunk(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var frames []*atollpb.Frame
		err := parseChunk(data, func(fr *atollpb.Frame) { frames = append(frames, fr) })
		// What a socket's reader makes of the same bytes.
		var want []*atollpb.Frame
		var sockErr error
		for r := bytes.NewReader(data); ; {
			fr, err := readFrame(r)
			if err != nil {
				sockErr = err
				break
			}
			want = append(want, fr)
		}
		switch {
		case sockErr == io.EOF:
			if err != nil || len(frames) != len(want) {
				t.Fatalf("whole frames: %d of %d, %v", len(frames), len(want), err)
			}
		case !errors.Is(err, ErrBadFrame):
			t.Fatalf("a bad burst ended with %v", err)
		case len(frames) != len(want):
			t.Fatalf("a bad burst: %d frames before the error, the socket reader read %d", len(frames), len(want))
		}
		for i := range frames {
			if !proto.Equal(frames[i], want[i]) {
				t.Fatalf("frame %d differs from the socket reader's", i)
			}
		}
		// What the parser delivered does not alias the burst.
		for i := range data {
			data[i] ^= 0xff
		}
		for i := range frames {
			if !proto.Equal(frames[i], want[i]) {
				t.Fatalf("frame %d changed with the burst's bytes", i)
			}
		}
	})
}

func TestPipeChunkBounds(t *testing.T) {
	for _, data := range [][]byte{
		header(MaxFrame + 1),
		append(header(10), 1, 2),
		header(0)[:2],
		append(header(3), 0xff, 0xff, 0xff),
	} {
		if err := parseChunk(data, func(*atollpb.Frame) {}); !errors.Is(err, ErrBadFrame) {
			t.Errorf("% x: %v, want ErrBadFrame", data, err)
		}
	}
	ok := binary.BigEndian.AppendUint32(nil, 0)
	if err := parseChunk(ok, func(*atollpb.Frame) {}); err != nil {
		t.Fatalf("an empty frame: %v", err)
	}
}

// BenchmarkRoundTrip measures a request and its reply, over each
// transport: the cost of one frame each way.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tr := range transports {
		for _, size := range []int{64, 4 << 10} {
			b.Run(fmt.Sprintf("%s/%dB", tr.name, size), func(b *testing.B) {
				ea, eb := tr.ends()
				var server *Conn
				ready := make(chan struct{})
				server = Open(eb, func(f *atollpb.Frame) {
					<-ready
					_ = server.Reply(f.Id, f)
				})
				close(ready)
				client := Open(ea, func(*atollpb.Frame) {})
				defer func() { client.Close(); server.Close(); <-client.Done(); <-server.Done() }()
				req := payloadFrame(1, size)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := client.Call(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
