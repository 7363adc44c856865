package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Submitted jobs (`atoll job submit`): every cluster node (not a
// driver's) runs a job service, one actor (StartService). It receives files
// in chunks over NATS (JobUpload: the driver's binary, installed
// content-addressed in jobBinDir, and an optional working directory
// archive), runs a binary as a job's driver on request (JobSubmit), stops
// one (JobStop) and serves logs (logs.go). The driver is a child process
// in a process group of its own, in the job's directory (the working
// directory, extracted, if one was sent), with the cluster's address and
// credentials in its environment; its stdout and stderr go to the job's
// log file. The job's entry in the GCS (JobInfo, submitted) follows it:
// PENDING, RUNNING, then SUCCEEDED, FAILED (with its exit code) or
// STOPPED.

// EnvSubmissionID is set in a submitted job's driver: the job's id (hex),
// which the driver records in its own job's entry (JobInfo.submission_id).
const EnvSubmissionID = "ATOLL_SUBMISSION_ID"

const (
	// maxRunningJobs bounds the jobs one node runs at once.
	maxRunningJobs = 64
	// maxKeptJobs bounds the finished jobs whose directory (and log) a
	// node keeps; older ones are removed.
	maxKeptJobs = 256
	// maxJobArgs and maxJobArgBytes bound a submitted command line.
	maxJobArgs     = 1024
	maxJobArgBytes = 64 << 10
	// jobStopGrace is how long a stopped job's driver has between SIGTERM
	// and SIGKILL.
	jobStopGrace = 10 * time.Second
	// jobGCSTimeout bounds each update of a job's GCS entry.
	jobGCSTimeout = 10 * time.Second
)

// jobSubject is one of a node's job subjects.
func jobSubject(node ids.NodeID, kind string) string {
	return cluster.DefaultPrefix + ".node." + node.String() + "." + kind
}

// The job service's subjects on a node.
const (
	jobUploadKind = "jobupload"
	jobSubmitKind = "jobsubmit"
	jobStopKind   = "jobstop"
	// logReadKind: reads of a node's, a job's or a worker's log from an
	// offset (joblogs.go; "logs" is the dashboard's tail of the node's
	// log, logs.go).
	logReadKind = "logread"
)

// Config is what a node's job service needs from the node.
type Config struct {
	// NodeID is the node's id: its job subjects, the jobs' entries.
	NodeID ids.NodeID
	// Dir is the node's jobs directory (in its session directory): the
	// jobs' directories and logs, uploads under way, working
	// directories. Binaries go to StateDir (jobBinDir), shared by the
	// machine's nodes.
	Dir string
	// Conn is the node's NATS connection; GCS its GCS client.
	Conn *nats.Conn
	GCS  *gcs.Client
	// System is the node's actor system, and Spawn starts the service's
	// actor on it: the node stops that actor as it stops, and the
	// actor's Stopping stops the running jobs.
	System *actor.ActorSystem
	Spawn  func(props *actor.Props, name string) (*actor.PID, error)
	// Head: the node is the head, which fails the jobs of nodes that die
	// (nothing else would end their entries).
	Head bool
	// NodeLog is the node's own log file (nodeconfig.Config.LogFile); ""
	// serves its standard error when that is a file.
	NodeLog string
	// WorkerLog finds a worker process's log file on the node and whether
	// the worker exited; nil: the node keeps none.
	WorkerLog func(ids.WorkerID) (path string, ended, ok bool)
	// Address, Secret and Credentials go into a job driver's environment:
	// the cluster it joins (the node's cluster address, its resolved
	// secret in hex, and the TLS and NATS files it was given).
	Address     string
	Secret      string
	Credentials nodeconfig.Credentials
	Logger      *slog.Logger
	// MaxBinaryBytes bounds the bytes of binaries the machine keeps for
	// jobs that ended (binaries.go; nodeconfig's JobBinariesMaxBytes);
	// 0: DefaultMaxBinaryBytes.
	MaxBinaryBytes int64
}

// jobService is a node's job service: its actor's state (the struct
// outlives restarts of the actor, so running jobs are not forgotten).
type jobService struct {
	cfg     Config
	log     *slog.Logger
	dir     string // cfg.Dir
	pid     *actor.PID
	subs    []*nats.Subscription
	unwatch func() // the head's node events (failJobsOf)

	uploads map[string]*upload // only the actor touches it
	// jobs holds every job the node ran and still keeps; guarded by mu
	// (the log readers look paths up from NATS callbacks).
	mu       sync.Mutex
	jobs     map[ids.JobID]*nodeJob
	finished []ids.JobID // in the order they ended, for maxKeptJobs
}

// nodeJob is one job this node runs or ran.
type nodeJob struct {
	id      ids.JobID
	dir     string
	log     string
	info    *atollpb.JobInfo // its GCS entry as last written (the job's goroutine owns it)
	cmd     *exec.Cmd        // nil until started
	done    chan struct{}    // closed when the driver exited and the entry is final
	stopped bool             // stop was asked (guarded by jobService.mu)
}

// Messages of the job service's actor.
type (
	jobRequest struct {
		msg  *nats.Msg
		kind string
	}
	jobExited struct{ id ids.JobID }
)

// StartService starts a node's job service: its actor and its NATS
// subscriptions.
func StartService(cfg Config) error {
	s := &jobService{cfg: cfg, log: cfg.Logger, dir: cfg.Dir, uploads: map[string]*upload{}, jobs: map[ids.JobID]*nodeJob{}}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("jobs directory: %w", err)
	}
	pid, err := cfg.Spawn(actor.PropsFromProducer(func() actor.Actor { return s }), "jobs")
	if err != nil {
		return err
	}
	s.pid = pid
	root := cfg.System.Root
	for _, kind := range []string{jobUploadKind, jobSubmitKind, jobStopKind} {
		sub, err := cfg.Conn.Subscribe(jobSubject(cfg.NodeID, kind), func(m *nats.Msg) { root.Send(pid, &jobRequest{msg: m, kind: kind}) })
		if err != nil {
			s.unsubscribe()
			return fmt.Errorf("subscribe to %s: %w", kind, err)
		}
		s.subs = append(s.subs, sub)
	}
	// Log reads do file I/O only: they run on goroutines of their own.
	sub, err := cfg.Conn.Subscribe(jobSubject(cfg.NodeID, logReadKind), func(m *nats.Msg) { go s.serveLogs(m) })
	if err != nil {
		s.unsubscribe()
		return fmt.Errorf("subscribe to logs: %w", err)
	}
	s.subs = append(s.subs, sub)
	if cfg.Head {
		// The head fails the jobs of nodes that die: nothing else would
		// end their entries.
		if s.unwatch, err = cfg.GCS.SubscribeNodeEvents(func(info *atollpb.NodeInfo) {
			if info.State == atollpb.NodeState_NODE_DEAD {
				go s.failJobsOf(info.NodeId)
			}
		}); err != nil {
			s.unsubscribe()
			return fmt.Errorf("subscribe to node events: %w", err)
		}
	}
	return nil
}

// failJobsOf marks FAILED the submitted jobs the GCS lists running on a
// node that died.
func (s *jobService) failJobsOf(nodeID []byte) {
	dead, err := ids.FromBytes(nodeID)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), jobGCSTimeout)
	defer cancel()
	jobs, err := s.cfg.GCS.ListJobs(ctx)
	if err != nil {
		s.log.Warn("job: cannot list the jobs of a dead node", "node", dead.Short(), "err", err)
		return
	}
	for _, j := range jobs {
		if !j.Submitted || j.Finished || string(j.NodeId) != string(nodeID) {
			continue
		}
		j.State, j.Finished, j.EndTimeUnixMs = atollpb.JobState_JOB_FAILED, true, time.Now().UnixMilli()
		j.Message = "its node " + dead.Short() + " died"
		if err := s.cfg.GCS.AddJob(ctx, j); err != nil {
			s.log.Warn("job: cannot mark a dead node's job failed", "job", hex.EncodeToString(j.JobId), "err", err)
		}
	}
}

func (s *jobService) unsubscribe() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
	if s.unwatch != nil {
		s.unwatch()
		s.unwatch = nil
	}
}

// Receive handles the service's requests, one at a time.
func (s *jobService) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *jobRequest:
		s.handle(ctx, m)
	case *jobExited:
		s.mu.Lock()
		s.finished = append(s.finished, m.id)
		var drop []*nodeJob
		for len(s.finished) > maxKeptJobs {
			if j := s.jobs[s.finished[0]]; j != nil {
				drop = append(drop, j)
				delete(s.jobs, j.id)
			}
			s.finished = s.finished[1:]
		}
		s.mu.Unlock()
		for _, j := range drop {
			_ = os.RemoveAll(j.dir)
		}
	case *actor.Stopping:
		s.unsubscribe()
		s.stopAll()
		for _, u := range s.uploads {
			u.abort()
		}
		s.uploads = map[string]*upload{}
	}
}

// handle answers one request from NATS; bad requests get a typed error.
func (s *jobService) handle(ctx actor.Context, r *jobRequest) {
	var reply proto.Message
	switch r.kind {
	case jobUploadKind:
		var req atollpb.JobUpload
		if err := proto.Unmarshal(r.msg.Data, &req); err != nil {
			reply = &atollpb.JobUploadReply{Error: errs.ToProto(errs.Invalidf("job upload: %v", err))}
			break
		}
		reply = s.receive(&req, time.Now())
	case jobSubmitKind:
		var req atollpb.JobSubmit
		if err := proto.Unmarshal(r.msg.Data, &req); err != nil {
			reply = &atollpb.JobSubmitReply{Error: errs.ToProto(errs.Invalidf("job submit: %v", err))}
			break
		}
		j, err := s.prepare(&req)
		if err != nil {
			s.log.Warn("job submission refused", "err", err)
			reply = &atollpb.JobSubmitReply{Error: errs.ToProto(err)}
			break
		}
		// The job's own goroutine records it, starts it and answers.
		system, self := ctx.ActorSystem(), ctx.Self()
		go s.run(j, r.msg, func() { system.Root.Send(self, &jobExited{id: j.id}) })
		return
	case jobStopKind:
		var req atollpb.JobStop
		err := proto.Unmarshal(r.msg.Data, &req)
		if err == nil {
			err = s.stop(req.JobId)
		} else {
			err = errs.Invalidf("job stop: %v", err)
		}
		reply = &atollpb.JobStopReply{Error: errs.ToProto(err)}
	}
	s.respond(r.msg, reply)
}

// respond answers m (if it asked for an answer).
func (s *jobService) respond(m *nats.Msg, reply proto.Message) {
	if m.Reply == "" {
		return
	}
	b, err := proto.Marshal(reply)
	if err == nil {
		err = m.Respond(b)
	}
	if err != nil {
		s.log.Debug("job service: reply failed", "subject", m.Subject, "err", err)
	}
}

// prepare validates a submission and makes the job's directory.
func (s *jobService) prepare(req *atollpb.JobSubmit) (*nodeJob, error) {
	if len(req.BinarySha256) != sha256.Size {
		return nil, errs.Invalidf("job submit: want the binary's 32-byte SHA-256")
	}
	if err := checkBinaryName(req.BinaryName); err != nil {
		return nil, err
	}
	if len(req.Args) > maxJobArgs {
		return nil, errs.Invalidf("job submit: %d arguments (at most %d)", len(req.Args), maxJobArgs)
	}
	size := 0
	for _, a := range req.Args {
		size += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errs.Invalidf("job submit: an argument holds a NUL byte")
		}
	}
	if size > maxJobArgBytes {
		return nil, errs.Invalidf("job submit: arguments of %d bytes (at most %d)", size, maxJobArgBytes)
	}
	bin := s.installedFile(atollpb.JobFileKind_JOB_FILE_BINARY, req.BinarySha256, req.BinaryName)
	if bin == "" {
		return nil, errs.NotFoundf("job submit: node %s has no binary %s with SHA-256 %x… (upload it first)", s.cfg.NodeID.Short(), req.BinaryName, req.BinarySha256[:6])
	}
	var workdir string
	if len(req.WorkingDirSha256) > 0 {
		if len(req.WorkingDirSha256) != sha256.Size {
			return nil, errs.Invalidf("job submit: want the working directory's 32-byte SHA-256")
		}
		if workdir = s.installedFile(atollpb.JobFileKind_JOB_FILE_WORKING_DIR, req.WorkingDirSha256, ""); workdir == "" {
			return nil, errs.NotFoundf("job submit: node %s has no working directory with SHA-256 %x… (upload it first)", s.cfg.NodeID.Short(), req.WorkingDirSha256[:6])
		}
	}
	s.mu.Lock()
	running := len(s.jobs) - len(s.finished)
	s.mu.Unlock()
	if running >= maxRunningJobs {
		return nil, errs.Exhaustedf("job submit: node %s runs %d jobs already", s.cfg.NodeID.Short(), running)
	}
	id := ids.NewJobID()
	j := &nodeJob{id: id, dir: filepath.Join(s.dir, id.String()), done: make(chan struct{})}
	j.log = filepath.Join(j.dir, "driver.log")
	work := filepath.Join(j.dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, errs.Unavailablef("job submit: %v", err)
	}
	if workdir != "" {
		if err := extractWorkingDir(workdir, work); err != nil {
			_ = os.RemoveAll(j.dir)
			return nil, err
		}
	}
	cmd := exec.Command(bin, req.Args...)
	cmd.Dir = work
	cmd.Env = s.jobEnv(id)
	creds, err := s.credentialsPipe()
	if err != nil {
		_ = os.RemoveAll(j.dir)
		return nil, errs.Unavailablef("job submit: %v", err)
	}
	cmd.ExtraFiles = []*os.File{creds} // descriptor 3; closed here once the driver started
	// A process group of its own (stop signals the driver and its local
	// worker processes); the driver does not outlive its node.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	j.cmd = cmd
	j.info = &atollpb.JobInfo{JobId: id.Bytes(), Submitted: true, State: atollpb.JobState_JOB_PENDING, NodeId: s.cfg.NodeID.Bytes(),
		Entrypoint: strings.Join(append([]string{req.BinaryName}, req.Args...), " "), WorkerBinary: bin,
		WorkerBinarySha256: req.BinarySha256, StartTimeUnixMs: time.Now().UnixMilli()}
	s.mu.Lock()
	s.jobs[id] = j
	s.mu.Unlock()
	return j, nil
}

// jobEnv is a job driver's environment: the node's, without what makes
// a process a node or a worker or names another cluster, and without
// credentials, plus the cluster's address, the job's id and the
// descriptor (3) its credentials come on (credentialsPipe).
func (s *jobService) jobEnv(id ids.JobID) []string {
	drop := []string{nodeconfig.EnvAddress, EnvSubmissionID, "ATOLL_WORKER"}
	var env []string
	for _, kv := range nodeconfig.WithoutCredentials(os.Environ()) {
		keep := true
		for _, d := range drop {
			if strings.HasPrefix(kv, d+"=") || strings.HasPrefix(kv, d+"_") {
				keep = false
				break
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return append(env, nodeconfig.EnvAddress+"="+s.cfg.Address, EnvSubmissionID+"="+id.String(), nodeconfig.EnvCredentialsFD+"=3")
}

// credentialsPipe returns the read end of a pipe holding the cluster's
// credentials for a job driver (its descriptor 3): the driver reads them
// once and closes it, so neither its environment nor its worker
// processes' hold them.
func (s *jobService) credentialsPipe() (*os.File, error) {
	c := s.cfg.Credentials
	c.Secret, c.SecretFile, c.ReaderToken = s.cfg.Secret, "", ""
	lines := nodeconfig.CredentialLines(c)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(lines); err != nil { // a few hundred bytes: the pipe's buffer holds them
		r.Close()
		return nil, err
	}
	return r, nil
}

// run records the job, starts its driver, answers the submitter, waits
// for the driver to exit and records how it ended. exited tells the
// actor.
func (s *jobService) run(j *nodeJob, m *nats.Msg, exited func()) {
	defer exited()
	defer close(j.done)
	log := s.log.With("job", j.id.String())
	if err := s.record(j, nil); err != nil {
		s.respond(m, &atollpb.JobSubmitReply{Error: errs.ToProto(err)})
		for _, f := range j.cmd.ExtraFiles {
			_ = f.Close()
		}
		s.forget(j)
		return
	}
	out, err := os.OpenFile(j.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		j.cmd.Stdout, j.cmd.Stderr = out, out
		s.mu.Lock()
		if j.stopped {
			err = errors.New("stopped before it started")
		} else {
			err = j.cmd.Start()
		}
		s.mu.Unlock()
		_ = out.Close() // the child holds its own descriptor
	}
	for _, f := range j.cmd.ExtraFiles {
		_ = f.Close() // the credentials' pipe: the child holds its own end, or never started
	}
	if err != nil {
		log.Warn("job did not start", "err", err)
		_ = s.record(j, func(i *atollpb.JobInfo) {
			i.State, i.Message, i.Finished, i.EndTimeUnixMs = atollpb.JobState_JOB_FAILED, "did not start: "+err.Error(), true, time.Now().UnixMilli()
		})
		s.respond(m, &atollpb.JobSubmitReply{JobId: j.id.Bytes()})
		return
	}
	log.Info("job started", "pid", j.cmd.Process.Pid, "entrypoint", j.info.Entrypoint)
	s.respond(m, &atollpb.JobSubmitReply{JobId: j.id.Bytes()})
	_ = s.record(j, func(i *atollpb.JobInfo) { i.State = atollpb.JobState_JOB_RUNNING })
	werr := j.cmd.Wait()
	code := j.cmd.ProcessState.ExitCode()
	s.mu.Lock()
	stopped := j.stopped
	s.mu.Unlock()
	_ = s.record(j, func(i *atollpb.JobInfo) {
		i.ExitCode, i.Finished, i.EndTimeUnixMs = int32(code), true, time.Now().UnixMilli()
		switch {
		case stopped:
			i.State, i.Message = atollpb.JobState_JOB_STOPPED, "stopped"
		case werr == nil:
			i.State = atollpb.JobState_JOB_SUCCEEDED
		default:
			i.State, i.Message = atollpb.JobState_JOB_FAILED, werr.Error()
		}
	})
	log.Info("job ended", "state", j.info.State.String(), "exit_code", code)
}

// record applies change to the job's entry and writes it to the GCS.
func (s *jobService) record(j *nodeJob, change func(*atollpb.JobInfo)) error {
	if change != nil {
		change(j.info)
	}
	ctx, cancel := context.WithTimeout(context.Background(), jobGCSTimeout)
	defer cancel()
	err := s.cfg.GCS.AddJob(ctx, proto.CloneOf(j.info))
	if err != nil {
		s.log.Warn("job: recording its state in the GCS failed", "job", j.id.String(), "state", j.info.State.String(), "err", err)
	}
	return err
}

// forget drops a job that never started.
func (s *jobService) forget(j *nodeJob) {
	s.mu.Lock()
	delete(s.jobs, j.id)
	s.mu.Unlock()
	_ = os.RemoveAll(j.dir)
}

// stop signals a running job's driver: SIGTERM to its process group,
// SIGKILL after jobStopGrace.
func (s *jobService) stop(id []byte) error {
	jid, err := ids.FromBytes(id)
	if err != nil {
		return errs.Invalidf("job stop: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[jid]
	if j == nil {
		return errs.NotFoundf("job %s does not run on node %s", jid.String(), s.cfg.NodeID.Short())
	}
	select {
	case <-j.done:
		return nil // already ended
	default:
	}
	j.stopped = true
	if j.cmd.Process == nil {
		return nil // not started yet: run sees stopped
	}
	pgid := j.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := j.done
	time.AfterFunc(jobStopGrace, func() {
		select {
		case <-done:
		default:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	return nil
}

// stopAll stops every running job as the node stops: SIGTERM, then
// SIGKILL to those still running a few seconds later.
func (s *jobService) stopAll() {
	s.mu.Lock()
	var running []*nodeJob
	for _, j := range s.jobs {
		select {
		case <-j.done:
		default:
			j.stopped = true
			if j.cmd.Process != nil {
				_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGTERM)
				running = append(running, j)
			}
		}
	}
	s.mu.Unlock()
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	for _, j := range running {
		select {
		case <-j.done:
		case <-deadline.C:
			for _, j := range running {
				_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
			}
			return
		}
	}
}

// jobLog returns the log path of a job this node runs or ran and whether
// the job has ended.
func (s *jobService) jobLog(id ids.JobID) (path string, ended bool, ok bool) {
	s.mu.Lock()
	j := s.jobs[id]
	s.mu.Unlock()
	if j == nil {
		return "", false, false
	}
	select {
	case <-j.done:
		ended = true
	default:
	}
	return j.log, ended, true
}

// errNoNodeLog: the node's log is not a file it can read back.
var errNoNodeLog = errors.New("the node's standard error is not a file")
