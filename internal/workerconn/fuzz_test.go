package workerconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// frameBytes returns frames as a peer writes them: each one's length,
// then its protobuf bytes.
func frameBytes(tb testing.TB, frames ...*atollpb.Frame) []byte {
	tb.Helper()
	var out []byte
	for _, f := range frames {
		b, err := proto.Marshal(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// header returns a frame header claiming n bytes.
func header(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// addFrameSeeds adds well-formed streams, truncated ones, oversize and
// huge length prefixes, and bytes that are not frames.
func addFrameSeeds(f *testing.F) {
	valid := frameBytes(f,
		exitFrame("bye"),
		&atollpb.Frame{Id: 7, Body: &atollpb.Frame_Status{Status: &atollpb.ErrorInfo{Code: atollpb.ErrorCode_NOT_FOUND, Message: "m"}}},
		&atollpb.Frame{ReplyTo: 3, Body: &atollpb.Frame_CreateObject{CreateObject: &atollpb.CreateObjectRequest{}}},
		&atollpb.Frame{},
	)
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:6])
	f.Add(valid[:2])
	f.Add([]byte{})
	f.Add(header(MaxFrame + 1))
	f.Add(header(MaxFrame))
	f.Add(append(header(1<<31), 1, 2, 3))
	f.Add(append(header(3), 0xff, 0xff, 0xff))
	f.Add(append(header(2), 0x0a, 0x05)) // a field whose length runs past the frame
}

// FuzzReadFrame reads frames from arbitrary bytes until an error. It must
// never panic; the stream ends with io.EOF (at a frame boundary),
// io.ErrUnexpectedEOF (inside a frame) or ErrBadFrame, and every frame read
// came from a length within MaxFrame.
func FuzzReadFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			start := r.Len()
			fr, err := readFrame(r)
			if err != nil {
				switch {
				case errors.Is(err, io.EOF):
					if start != 0 {
						t.Fatalf("io.EOF with %d bytes left", start)
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrBadFrame):
				default:
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			used := start - r.Len()
			if n := binary.BigEndian.Uint32(data[len(data)-start:]); int(n)+4 != used || n > MaxFrame {
				t.Fatalf("frame of %d bytes read from %d", n, used)
			}
			if _, err := proto.Marshal(fr); err != nil {
				t.Fatalf("a frame read does not marshal: %v", err)
			}
		}
	})
}

// FuzzConn feeds arbitrary bytes to a Conn over net.Pipe, then closes the
// peer. The Conn must end (no hang: the test fails after 10 s), every
// frame before the first bad one that is not a reply must reach the
// handler, and the Conn's error must be exactly ErrClosed when the bytes
// were whole frames, else ErrClosed wrapping ErrBadFrame or
// io.ErrUnexpectedEOF.
func FuzzConn(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// What readFrame makes of the bytes.
		wantFrames, wantClean := 0, false
		for r := bytes.NewReader(data); ; {
			fr, err := readFrame(r)
			if err != nil {
				wantClean = err == io.EOF
				break
			}
			if fr.ReplyTo == 0 {
				wantFrames++
			}
		}

		a, b := net.Pipe()
		deadline := time.Now().Add(10 * time.Second)
		if err := b.SetDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		frames := 0
		c := New(a, func(*atollpb.Frame) { frames++ })
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			_, _ = b.Write(data) // fails once the Conn gives up and closes a
			_ = b.Close()
		}()
		select {
		case <-c.Done():
		case <-time.After(time.Until(deadline)):
			c.Close()
			<-wrote
			t.Fatalf("the connection did not end after the peer wrote %d bytes and closed", len(data))
		}
		<-wrote
		err := c.Err()
		switch {
		case wantClean:
			if err != ErrClosed || frames != wantFrames {
				t.Fatalf("whole frames: %d of %d handled, connection ended with %v", frames, wantFrames, err)
			}
		case !errors.Is(err, ErrClosed) || !(errors.Is(err, ErrBadFrame) || errors.Is(err, io.ErrUnexpectedEOF)):
			t.Fatalf("bad stream: connection ended with %v", err)
		case frames != wantFrames:
			t.Fatalf("bad stream: %d frames handled, %d before the bad one", frames, wantFrames)
		}
	})
}

// A length prefix alone must not make the reader allocate the frame: it
// grows the buffer as the bytes arrive.
func TestFrameLengthDoesNotAllocate(t *testing.T) {
	for _, n := range []uint32{MaxFrame, MaxFrame / 2, 3 * frameChunk} {
		data := append(header(n), make([]byte, 100)...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := readFrame(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("frame of %d bytes truncated after 100: %v", n, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 2*frameChunk {
			t.Fatalf("a header claiming %d bytes, then 100 bytes, allocated %d", n, got)
		}
	}
	if _, err := readFrame(bytes.NewReader(header(MaxFrame + 1))); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("frame beyond MaxFrame: %v", err)
	}
	// A large frame that does arrive is read whole.
	big := &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: string(bytes.Repeat([]byte("x"), 5*frameChunk+3))}}}
	got, err := readFrame(bytes.NewReader(frameBytes(t, big)))
	if err != nil || !proto.Equal(got, big) {
		t.Fatalf("large frame: %v", err)
	}
}
