package node

import (
	"path/filepath"
	"strconv"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/gcfloor"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// How the node's raylet runs its workers: as processes it starts, or as
// worker runtimes on goroutines of this process (Hooks.InProcess), both
// over the worker protocol (package workerproto); and what happens when
// one dies.

// InProcessWorker is a worker the node runs in this process
// (Hooks.InProcess): its ids, the node's arena (mapped in this process)
// and the worker's end of its in-memory connection to the raylet.
type InProcessWorker struct {
	ID    ids.WorkerID
	Node  ids.NodeID
	Arena *objectstore.Arena
	Conn  workerconn.Endpoint
}

// processConfig returns how the raylet starts its workers.
func (n *Node) processConfig() *raylet.ProcessConfig {
	if start := n.hooks.InProcess; start != nil {
		arena := n.arena
		return &raylet.ProcessConfig{Store: n.storePID, GCS: n.gcsClient.Do,
			InProcess: func(w ids.WorkerID, node ids.NodeID, conn workerconn.Endpoint) error {
				return start(InProcessWorker{ID: w, Node: node, Arena: arena, Conn: conn})
			}}
	}
	floor := n.cfg.WorkerHeapFloor
	if floor == 0 {
		floor = gcfloor.DefaultFloor
	}
	pc := &raylet.ProcessConfig{
		Binary: n.cfg.WorkerBinary, Arena: n.arena.File(), ArenaSize: n.arena.Size(), Store: n.storePID,
		GCS: n.gcsClient.Do, Output: n.cfg.WorkerOutput,
		Env: []string{raylet.EnvHeapFloor + "=" + strconv.FormatUint(floor, 10)},
	}
	if !n.cfg.Embedded() && !n.cfg.Driver {
		// A cluster node runs each job's own binary unless it was given one.
		pc.PerJobBinary = true
		pc.BinaryDir = filepath.Join(n.sessionDir, "bin")
		pc.Args = []string{}
		if n.workerLogs != nil {
			pc.OutputFor = n.workerLogs.outputFor
		}
	}
	if g := n.gateway; g != nil {
		pc.Fetch = g.Fetch
		pc.Delete = func(req *atollpb.DeleteObjectsRequest) {
			switch {
			case req.Revived:
				g.Revive(req.ObjectIds)
			case len(req.StrayNode) > 0:
				if node, err := ids.FromBytes(req.StrayNode); err == nil {
					g.FreeStrays(node, req.ObjectIds)
				}
			default:
				g.Free(req.ObjectIds)
			}
		}
	}
	return pc
}

// workerDied reclaims a dead worker's pins, its unsealed objects and the
// objects it owned (the raylet calls it on its goroutine: it only sends).
func (n *Node) workerDied(w ids.WorkerID) {
	n.workerStores.Delete(w)
	n.system.Root.Send(n.storePID, &atollpb.ClientDisconnected{ClientId: w.Bytes()})
	n.gateway.OwnerExited(w) // other nodes free what it owned there (nil-safe)
}
