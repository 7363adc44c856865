package node

import (
	"path/filepath"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/jobs"
)

// startJobs starts the node's job service (package jobs): a cluster
// node's, not a driver's. Its actor is one of the node's spawned actors,
// so Stop stops it (and the jobs it runs) after the raylet.
func (n *Node) startJobs() error {
	var workerLog func(ids.WorkerID) (string, bool, bool)
	if n.workerLogs != nil {
		workerLog = n.workerLogs.path
	}
	return jobs.StartService(jobs.Config{
		NodeID: n.id, Dir: filepath.Join(n.sessionDir, "jobs"), Conn: n.nc, GCS: n.gcsClient,
		System: n.system, Spawn: n.SpawnNamed, Head: n.cfg.Head,
		NodeLog: n.cfg.LogFile, WorkerLog: workerLog,
		Address: n.Address(), Secret: n.Secret(), Credentials: n.cfg.Credentials,
		Logger: n.log, MaxBinaryBytes: int64(min(n.cfg.JobBinariesMaxBytes, 1<<62)),
	})
}
