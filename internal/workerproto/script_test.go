package workerproto

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/testutil"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// The worker end of these tests: a Server with a scripted executor. With
// worker processes it runs in a re-executed copy of this test binary
// (TestMain sees raylet.EnvWorker), over the inherited socket; in-process
// it runs on goroutines of the test, over a pipe.

func TestMain(m *testing.M) {
	if os.Getenv(raylet.EnvWorker) == "1" {
		serveProcess()
		return
	}
	testutil.VerifyNoLeaks(m)
}

// serveProcess is a worker process: it serves its raylet until the
// connection ends.
func serveProcess() {
	id, err := ids.FromHex(os.Getenv(raylet.EnvWorkerID))
	if err != nil {
		os.Exit(3)
	}
	nc, err := net.FileConn(os.NewFile(raylet.ConnFD, "conn"))
	if err != nil {
		os.Exit(3)
	}
	srv := serveScripted(workerconn.Socket(nc), id, func() { os.Exit(0) })
	srv.Serve(os.Getpid())
	select {} // Exit ends the process
}

// serveScripted starts a worker serving end with scriptExec; exit is
// called when it must end.
func serveScripted(end workerconn.Endpoint, id ids.WorkerID, exit func()) *Server {
	e := &scriptExec{waiting: map[string]chan *atollpb.TaskResult{}, acks: make(chan int64, 64)}
	e.srv = NewServer(end, ServerConfig{WorkerID: id, Executor: e, Deliver: e.deliver,
		GeneratorAck: func(a *atollpb.GeneratorAck) { e.acks <- a.GetConsumed() }, Exit: exit})
	return e.srv
}

// servePipe starts a scripted worker serving one end of a pipe and
// returns the other end, the worker, and a channel closed when its Serve
// returns (once the connection closes).
func servePipe() (near workerconn.Endpoint, srv *Server, served chan struct{}) {
	return serveEnds(workerconn.Pipe())
}

// serveEnds is servePipe on the ends of another transport: far served,
// near returned.
func serveEnds(near, far workerconn.Endpoint) (workerconn.Endpoint, *Server, chan struct{}) {
	var srv *Server
	srv = serveScripted(far, ids.NewWorkerID(), func() { srv.Conn().Close() })
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(1)
	}()
	return near, srv, served
}

// scriptExec runs tasks and actors by name:
//
//	task echo          returns its name
//	task block         a generator: yields one item (it runs), waits for its
//	                   context, returns the context's cause
//	task gen           yields three items, waits until they are consumed
//	actor fail         its constructor fails
//	actor callout      its constructor runs an echo task and waits for it
//	method record      appends the call's name to the instance's calls
//	method panic       panics
type scriptExec struct {
	srv  *Server
	acks chan int64

	mu      sync.Mutex
	waiting map[string]chan *atollpb.TaskResult // results of the tasks it submitted
}

type scriptActor struct {
	mu    sync.Mutex
	calls []string
}

func reply(spec *atollpb.TaskSpec, value string) *atollpb.TaskResult {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Returns: []*atollpb.ReturnObject{
		{Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte(value)}}}}}
}

func failure(spec *atollpb.TaskSpec, err error) *atollpb.TaskResult {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(err)}
}

func (e *scriptExec) RunTask(ctx context.Context, spec *atollpb.TaskSpec) *atollpb.TaskResult {
	switch spec.Function {
	case "echo":
		return reply(spec, spec.Name)
	case "block":
		item := reply(spec, "running")
		item.GeneratorItem = &atollpb.GeneratorItem{Index: 0}
		if err := e.srv.Client().ReportItem(item); err != nil {
			return failure(spec, err)
		}
		<-ctx.Done()
		return failure(spec, context.Cause(ctx))
	case "gen":
		for i := range 3 {
			item := reply(spec, spec.Name)
			item.GeneratorItem = &atollpb.GeneratorItem{Index: int64(i)}
			if err := e.srv.Client().ReportItem(item); err != nil {
				return failure(spec, err)
			}
		}
		for {
			select {
			case n := <-e.acks:
				if n >= 3 {
					return reply(spec, "3")
				}
			case <-ctx.Done():
				return failure(spec, ctx.Err())
			}
		}
	}
	return failure(spec, errs.Invalidf("no task %q", spec.Function))
}

func (e *scriptExec) NewActor(ctx context.Context, spec *atollpb.TaskSpec) (any, error) {
	switch spec.GetActorCreation().GetActorType() {
	case "fail":
		return nil, errors.New("constructor failed on purpose")
	case "callout":
		res, err := e.submit(ctx, "from-constructor")
		if err != nil {
			return nil, err
		}
		a := &scriptActor{calls: []string{string(res.GetReturns()[0].GetValue().GetInline())}}
		return a, nil
	}
	return &scriptActor{}, nil
}

func (e *scriptExec) RunActorTask(_ context.Context, instance any, spec *atollpb.TaskSpec) (*atollpb.TaskResult, bool) {
	a := instance.(*scriptActor)
	switch spec.Function {
	case "A.record":
		a.mu.Lock()
		a.calls = append(a.calls, spec.Name)
		calls := strings.Join(a.calls, ",")
		a.mu.Unlock()
		return reply(spec, calls), false
	case "A.panic":
		res := failure(spec, errors.New("panic: on purpose"))
		res.ActorCrashed = true
		return res, true
	}
	return failure(spec, errs.Invalidf("no method %q", spec.Function)), false
}

// submit runs an echo task named name from this worker and waits for its
// result, which comes back to the worker's owner (Deliver).
func (e *scriptExec) submit(ctx context.Context, name string) (*atollpb.TaskResult, error) {
	id := ids.NewTaskID()
	ch := make(chan *atollpb.TaskResult, 1)
	e.mu.Lock()
	e.waiting[string(id.Bytes())] = ch
	e.mu.Unlock()
	e.srv.Client().SubmitTask(&atollpb.TaskSpec{TaskId: id.Bytes(), Name: name, Function: "echo", NumReturns: 1,
		Resources: map[string]float64{raylet.CPU: 1}})
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *scriptExec) deliver(m proto.Message) {
	res, ok := m.(*atollpb.TaskResult)
	if !ok {
		return
	}
	e.mu.Lock()
	ch := e.waiting[string(res.GetTaskId())]
	delete(e.waiting, string(res.GetTaskId()))
	e.mu.Unlock()
	if ch != nil {
		ch <- res
	}
}
