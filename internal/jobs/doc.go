// Package jobs is the job service of a cluster node and its client:
// `atoll job submit|status|stop|logs` and `atoll logs`.
//
// The service (StartService; service.go) runs on every cluster node but
// a driver's, as one actor of the node's actor system. It receives files
// in chunks over NATS (files.go: a driver's binary, installed
// content-addressed in the machine's state directory so that the nodes
// of a machine share one copy, and a working directory archive), runs a
// binary as a job's driver (a child process in a process group of its
// own, with the cluster's address and credentials in its environment)
// and records the job in the GCS (PENDING, RUNNING, then SUCCEEDED,
// FAILED or STOPPED), stops one, and serves reads of logs from any
// offset (logs.go): the node's own, its jobs' and its worker processes'.
// The head also fails the jobs of nodes that die.
//
// The client (client.go) ships a binary to every live node that lacks
// it and submits it (Submit), finds and stops jobs (Get, Stop) and reads
// or follows logs (ReadLog, FollowLog).
//
// # Submitting a job
//
// The service is one supervised actor with four subjects on the node's
// own subject space (<prefix>.node.<id>.<kind>: jobupload, jobsubmit,
// jobstop and logread, carrying atollpb.JobUpload, JobSubmit, JobStop and
// LogRead; job.proto).
// Submit reads the binary (at most MaxBinaryBytes, 512 MiB) and sends it
// in ChunkBytes (512 KiB, under NATS's 1 MiB payload) chunks to every live
// node, the target (the head, or one named) first, then the others at
// once, each with up to eight chunks in flight. A chunk at offset 0
// with no data asks whether the node already has the file, so nodes on
// one machine, which share the content-addressed directory
// $TMPDIR/atoll-<uid>/jobs/bin/<sha256>/<name>, store it once. Chunks must
// arrive in order; the service hashes them as they come and installs the
// file (a temp file, then a rename) only if the hash is the one announced.
// The same path on every node matters: the driver runs from it, so its
// tasks' TaskSpec.worker_binary names it and each node's raylet runs (and
// hash-checks) its own copy. The directory is bounded (Config.
// MaxBinaryBytes, default 8 GiB; binaries.go): after installing a
// binary, a node removes the least recently used others past the bound,
// in a goroutine, except those of jobs the GCS lists as not finished and
// those used (installed, or found by an upload or a submission) within
// the last hour; without the GCS's list it removes none. A working directory is a tar.gz (at most
// MaxWorkingDirBytes, 64 MiB, packed and unpacked, 10,000 entries, files
// and directories only, no path leaving the directory) sent to the target
// alone and unpacked into <session>/jobs/<job id>/work. The upload table
// holds at most 8 files half-received; one idle for 2 minutes is dropped.
//
// Then JobSubmit: the service validates it (hash, name, at most 1024
// arguments and 64 KiB of them, at most 64 running jobs per node), records
// the job in the GCS (JobInfo with submitted, PENDING, the node), starts
// the driver in a process group of its own (Setpgid, Pdeathsig SIGTERM)
// with the node's environment minus what names a node, worker or cluster,
// plus ATOLL_ADDRESS, the cluster secret (and TLS files) and
// EnvSubmissionID, its stdout and stderr appended to <job dir>/driver.log;
// it answers with the job id, writes RUNNING, waits for the exit and
// writes SUCCEEDED, FAILED (exit code, reason) or STOPPED. Each job has
// one goroutine for all of that; the actor only keeps the tables. The
// driver records its own job (every Init is one) with submission_id
// pointing at the submitted one. JobStop sends SIGTERM to the process
// group and SIGKILL 10 s later; a node that stops does the same to its
// jobs (within 3 s). A node keeps the directories of its last 256 finished
// jobs. There is no other copy of a job's log: a node that dies takes its
// jobs' logs with it. The head's service watches the GCS's node events and
// marks a dead node's running jobs FAILED; an event missed while the head
// was down is not made up for (such a job stays RUNNING). A node declared
// dead that was only cut off stops its jobs as it exits; their entries
// then say STOPPED.
//
// # Log reads
//
// The logread subject serves LogRead{kind, id, offset, max_bytes} from a
// goroutine per request (file reads only): LOG_NODE is the node's
// Config.LogFile or else its stderr when that is a regular file
// (/proc/self/fd/2), LOG_JOB a job's driver.log, LOG_WORKER a worker's
// file. A read returns at most MaxLogChunk (256 KiB) and the log's size; a
// negative offset counts from the end; final says the job or worker ended,
// so FollowLog (polling every 250 ms) knows when to stop. The reader role
// may publish on <prefix>.node.*.logread; uploads, submissions and stops
// need a writing role.
//
// # Locks
//
// jobService.mu guards the table of jobs (log reads look paths up from
// NATS callbacks); it is held only for map and flag access and to start or
// signal a driver: a leaf. The uploads are the actor's alone.
//
// It does not capture worker processes' output (the node assembly does,
// internal/node's workerlogs.go, and tells the service where each
// worker's log is: Config.WorkerLog), nor does it run a driver's own job
// entry (the SDK records that).
package jobs
