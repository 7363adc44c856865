package workerproc

import (
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
)

// ExitGrace is how long a worker process whose actor stops (the node
// stops, an idle worker is reaped, an actor is killed) gets to exit on
// its own before it is killed: it exports the spans it still holds
// first. A crash restart or a kill-worker fault kills at once.
const ExitGrace = 3 * time.Second

// stop asks the process to exit (a WorkerExit frame) and kills it if it
// has not within ExitGrace, or if the frame cannot be sent.
func (p *workerProcess) stop() {
	if p == nil || p.cmd == nil {
		return
	}
	if p.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{}}}) == nil {
		t := time.NewTimer(ExitGrace)
		select {
		case <-p.conn.Done():
		case <-t.C:
		}
		t.Stop()
	}
	p.kill()
}
