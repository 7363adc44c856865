package jobs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Submission is what Submit runs: a program and its arguments,
// and optionally a working directory archive.
type Submission struct {
	// Binary is the driver program's path on this machine. It is read
	// once, at submission: the nodes get its bytes, not its path.
	Binary string
	Args   []string
	// WorkingDir, if set, is a gzip-compressed tar archive of the
	// directory the driver starts in (see ArchiveDir).
	WorkingDir []byte
	// Node is the node that runs the driver (a prefix of its id, as
	// ResolveNode takes); default the head.
	Node string
}

// jobRequestTimeout bounds each request of Submit and Stop.
const jobRequestTimeout = 30 * time.Second

// Submit runs a program as a job's driver on a node of the cluster
// behind nc (`atoll job submit`): it sends the binary to every live
// node that lacks it (nodes on one machine share one copy: jobBinDir),
// in chunks of ChunkBytes over NATS, and the working directory to the
// node that runs the driver, which starts it and records the job in the
// GCS. It returns the job's id once the driver started (or failed to
// start: the job is then FAILED). Progress, if not nil, is told of each
// node the binary goes to.
func Submit(ctx context.Context, nc *nats.Conn, sub Submission, progress func(string)) (ids.JobID, error) {
	path, err := ResolveBinary(sub.Binary, sub.Args)
	if err != nil {
		return ids.JobID{}, err
	}
	sub.Binary = path
	bin, err := readBinary(sub.Binary)
	if err != nil {
		return ids.JobID{}, err
	}
	if len(sub.WorkingDir) > MaxWorkingDirBytes {
		return ids.JobID{}, errs.Invalidf("working directory: an archive of %s (at most %s)", sizeText(len(sub.WorkingDir)), sizeText(MaxWorkingDirBytes))
	}
	g := gcs.NewClient(nc, gcs.ClientOptions{})
	nodes, err := g.ListNodes(ctx)
	if err != nil {
		return ids.JobID{}, err
	}
	var target ids.NodeID
	if sub.Node != "" {
		if target, err = clusterclient.ResolveNode(ctx, g, sub.Node); err != nil {
			return ids.JobID{}, err
		}
	}
	var all []ids.NodeID
	for _, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err != nil || n.State != atollpb.NodeState_NODE_ALIVE || n.IsDriver {
			continue
		}
		if n.IsHead && target.IsZero() {
			target = id
		}
		all = append(all, id)
	}
	if target.IsZero() {
		return ids.JobID{}, errs.Unavailablef("no live head to run the job")
	}
	// The target first: its copy matters most, and nodes sharing its
	// machine then already hold the binary.
	slices.SortStableFunc(all, func(a, b ids.NodeID) int {
		switch {
		case a == target:
			return -1
		case b == target:
			return 1
		}
		return 0
	})
	sum := sha256.Sum256(bin)
	name := filepath.Base(sub.Binary)
	// The target first, then the other nodes at once.
	var mu sync.Mutex
	send := func(n ids.NodeID) error {
		sent, err := uploadFile(ctx, nc, n, atollpb.JobFileKind_JOB_FILE_BINARY, name, bin)
		if err != nil {
			return fmt.Errorf("send %s to node %s: %w", name, n.Short(), err)
		}
		if sent && progress != nil {
			mu.Lock()
			progress(fmt.Sprintf("sent %s (%s) to node %s", name, sizeText(len(bin)), n.Short()))
			mu.Unlock()
		}
		return nil
	}
	if len(all) == 0 || all[0] != target {
		return ids.JobID{}, errs.Unavailablef("node %s, to run the job, is not a live node that runs jobs (a driver's node runs none)", target.Short())
	}
	if err := send(all[0]); err != nil {
		return ids.JobID{}, err
	}
	failed := make([]error, len(all))
	var wg sync.WaitGroup
	for i, n := range all[1:] {
		wg.Go(func() { failed[i] = send(n) })
	}
	wg.Wait()
	if err := errors.Join(failed...); err != nil {
		return ids.JobID{}, err
	}
	req := &atollpb.JobSubmit{BinarySha256: sum[:], BinaryName: name, Args: sub.Args}
	if len(sub.WorkingDir) > 0 {
		if _, err := uploadFile(ctx, nc, target, atollpb.JobFileKind_JOB_FILE_WORKING_DIR, "", sub.WorkingDir); err != nil {
			return ids.JobID{}, fmt.Errorf("send the working directory to node %s: %w", target.Short(), err)
		}
		wsum := sha256.Sum256(sub.WorkingDir)
		req.WorkingDirSha256 = wsum[:]
	}
	var reply atollpb.JobSubmitReply
	if err := request(ctx, nc, target, jobSubmitKind, req, &reply, "submit the job to node "+target.Short()); err != nil {
		return ids.JobID{}, err
	}
	if reply.Error != nil {
		return ids.JobID{}, errs.FromProto(reply.Error)
	}
	return ids.FromBytes(reply.JobId)
}

// readBinary reads a driver program, at most MaxBinaryBytes.
// ResolveBinary finds the program a submission names, as a shell would:
// a name without a slash is looked up in PATH. The go command itself is
// refused with how to build the program first: a job is a built program
// sent to the nodes, not a build run on one.
func ResolveBinary(name string, args []string) (string, error) {
	path := name
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", errs.Invalidf("job binary %q: not found in PATH (a program in this directory is ./%s)", name, name)
		}
		path = p
	}
	if filepath.Base(path) == "go" && len(args) > 0 && (args[0] == "run" || args[0] == "build") {
		return "", errs.Invalidf("job binary %s: a job is a built program, sent to the nodes; build it first, then submit it: go build -o app . && atoll job submit -- ./app", name)
	}
	return path, nil
}

func readBinary(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Invalidf("job binary: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errs.Invalidf("job binary: %v", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, errs.Invalidf("job binary %s: not an executable file", path)
	}
	if fi.Size() > MaxBinaryBytes {
		return nil, errs.Invalidf("job binary %s: %s, at most %s", path, sizeText(fi.Size()), sizeText(MaxBinaryBytes))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxBinaryBytes+1))
	if err != nil {
		return nil, errs.Invalidf("job binary: %v", err)
	}
	if len(b) == 0 || len(b) > MaxBinaryBytes {
		return nil, errs.Invalidf("job binary %s: %s (1 byte to %s)", path, sizeText(len(b)), sizeText(MaxBinaryBytes))
	}
	return b, nil
}

// uploadWindow is how many chunks of an upload are in flight at once: a
// chunk waits for no round trip of the one before, and the node's job
// service still takes them in order (one subscription, one actor).
const uploadWindow = 8

// uploadFile sends data to node unless it already holds it; it reports
// whether it sent it.
func uploadFile(ctx context.Context, nc *nats.Conn, node ids.NodeID, kind atollpb.JobFileKind, name string, data []byte) (bool, error) {
	sum := sha256.Sum256(data)
	hdr := atollpb.JobUpload{Kind: kind, Sha256: sum[:], Size: uint64(len(data)), Name: name}
	var reply atollpb.JobUploadReply
	if err := request(ctx, nc, node, jobUploadKind, &hdr, &reply, "ask node "+node.Short()+" for the file"); err != nil {
		return false, err
	}
	if reply.Error != nil {
		return false, errs.FromProto(reply.Error)
	}
	if reply.Complete {
		return false, nil
	}
	last, err := sendChunks(ctx, nc, node, &hdr, data)
	if err != nil {
		return false, err
	}
	if !last.Complete {
		return false, errs.Unavailablef("node %s did not take the whole file (%s of %s)", node.Short(), sizeText(last.Received), sizeText(len(data)))
	}
	return true, nil
}

// sendChunks sends data to node in chunks of ChunkBytes from offset 0,
// uploadWindow of them in flight, and returns the node's reply to the
// last. It stops at the first reply that is an error (the chunks still in
// flight are refused by the node, which then holds no upload).
func sendChunks(ctx context.Context, nc *nats.Conn, node ids.NodeID, hdr *atollpb.JobUpload, data []byte) (*atollpb.JobUploadReply, error) {
	what := "send a chunk to node " + node.Short()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, requestError(what, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	subject := jobSubject(node, jobUploadKind)
	chunks := (len(data) + ChunkBytes - 1) / ChunkBytes
	reply := &atollpb.JobUploadReply{}
	for sent, answered := 0, 0; answered < chunks; answered++ {
		for ; sent < chunks && sent-answered < uploadWindow; sent++ {
			chunk := proto.CloneOf(hdr)
			off := sent * ChunkBytes
			chunk.Offset, chunk.Data = uint64(off), data[off:min(off+ChunkBytes, len(data))]
			b, err := proto.Marshal(chunk)
			if err != nil {
				return nil, err
			}
			if err := nc.PublishRequest(subject, inbox, b); err != nil {
				return nil, requestError(what, err)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, jobRequestTimeout)
		msg, err := sub.NextMsgWithContext(rctx)
		cancel()
		if err != nil {
			return nil, requestError(what, err)
		}
		if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
			return nil, requestError(what, nats.ErrNoResponders)
		}
		reply.Reset()
		if err := proto.Unmarshal(msg.Data, reply); err != nil {
			return nil, errs.Invalidf("%s: a bad answer: %v", what, err)
		}
		if reply.Error != nil {
			return nil, errs.FromProto(reply.Error)
		}
	}
	return reply, nil
}

// request sends req to one of node's job subjects and decodes the reply.
func request(ctx context.Context, nc *nats.Conn, node ids.NodeID, kind string, req, reply proto.Message, what string) error {
	b, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, jobRequestTimeout)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, jobSubject(node, kind), b)
	if err != nil {
		return requestError(what, err)
	}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return errs.Invalidf("%s: a bad answer: %v", what, err)
	}
	return nil
}

// requestError types a failed NATS request.
func requestError(what string, err error) error {
	if v := clusterclient.LastPermissionViolation(); v != nil && errors.Is(err, nats.ErrConnectionClosed) {
		return v
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return errs.Unavailablef("%s: the node does not answer (not running, or too old to serve jobs and logs)", what)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return errs.Unavailablef("%s: %v", what, err)
}

// Stop stops a submitted job that is running: its node sends its
// driver SIGTERM, then SIGKILL after 10 s; the job ends STOPPED.
func Stop(ctx context.Context, nc *nats.Conn, job ids.JobID) error {
	j, err := Get(ctx, nc, job.String())
	if err != nil {
		return err
	}
	if j.Finished {
		return nil
	}
	node, err := ids.FromBytes(j.NodeId)
	if err != nil {
		return errs.Invalidf("job %s: its entry names no node", job.String())
	}
	var reply atollpb.JobStopReply
	if err := request(ctx, nc, node, jobStopKind, &atollpb.JobStop{JobId: job.Bytes()}, &reply, "stop the job on node "+node.Short()); err != nil {
		return err
	}
	return errs.FromProto(reply.Error)
}

// Get finds the job whose hex id is or starts with prefix (at least 4
// hex digits) in the GCS behind nc.
func Get(ctx context.Context, nc *nats.Conn, prefix string) (*atollpb.JobInfo, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if len(prefix) < 4 || len(prefix) > 2*ids.Len16 {
		return nil, errs.Invalidf("job id %q: give 4 to 32 hex digits", prefix)
	}
	for _, c := range prefix {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return nil, errs.Invalidf("job id %q: not hex", prefix)
		}
	}
	jobs, err := gcs.NewClient(nc, gcs.ClientOptions{}).ListJobs(ctx)
	if err != nil {
		return nil, err
	}
	var found []*atollpb.JobInfo
	for _, j := range jobs {
		if id, err := ids.FromBytes(j.JobId); err == nil && strings.HasPrefix(id.String(), prefix) {
			found = append(found, j)
		}
	}
	switch len(found) {
	case 0:
		return nil, errs.NotFoundf("no job's id starts with %s", prefix)
	case 1:
		return found[0], nil
	}
	return nil, errs.Invalidf("job id %s: %d jobs' ids start with it; give more digits", prefix, len(found))
}

// logPoll is how often FollowLog asks for more of a growing log.
const logPoll = 250 * time.Millisecond

// FollowLog copies a log of node to w from offset (negative: that many
// bytes from the end) until its end or, with follow, until it is final
// (its job or worker ended) or ctx ends.
func FollowLog(ctx context.Context, nc *nats.Conn, node ids.NodeID, kind atollpb.LogKind, id []byte, offset int64, follow bool, w io.Writer) error {
	tick := time.NewTicker(logPoll)
	defer tick.Stop()
	for {
		c, err := ReadLog(ctx, nc, node, kind, id, offset, MaxLogChunk)
		if err != nil {
			return err
		}
		if _, err := w.Write(c.Data); err != nil {
			return err
		}
		offset = int64(c.Offset) + int64(len(c.Data))
		if uint64(offset) < c.Size {
			continue // more to read now
		}
		if !follow || c.Final {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil // Ctrl-C ends a follow
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// LogNode is the node holding a submitted job's log.
func LogNode(j *atollpb.JobInfo) (ids.NodeID, error) {
	if !j.Submitted {
		return ids.NodeID{}, errs.Invalidf("job %x is a driver's own job, not a submitted one: its output is the driver's own (no log on the cluster)", j.JobId)
	}
	return ids.FromBytes(j.NodeId)
}
