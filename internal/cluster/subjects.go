package cluster

import "github.com/atoll-runtime/atoll/internal/ids"

// DefaultPrefix starts every subject of the cluster protocol.
const DefaultPrefix = "atoll"

func loadSubject(prefix string, node ids.NodeID) string { return prefix + ".load." + node.String() }
func loadWildcard(prefix string) string                 { return prefix + ".load.*" }
func freeSubject(prefix string) string                  { return prefix + ".free" }

// nodeSubject is where node's gateway receives kind (task, call, result,
// held, cancel, genack, copy, locate, crash, timeline, stats, logs,
// objects, dropcopies, replicate, drain, leave, borrows).
func nodeSubject(prefix string, node ids.NodeID, kind string) string {
	return prefix + ".node." + node.String() + "." + kind
}

func killSubject(prefix string) string { return prefix + ".kill" }

// ammReplicasSubject is where the head's AMM takes SetReplicas requests.
func ammReplicasSubject(prefix string) string { return prefix + ".amm.replicas" }

// ammControlSubject is where the head's AMM takes AMMControl requests.
func ammControlSubject(prefix string) string { return prefix + ".amm.control" }

// ammDrainSubject is where the head's AMM takes DrainRequests.
func ammDrainSubject(prefix string) string { return prefix + ".amm.drain" }

// TimelineSubject is where node answers timeline requests (a
// atollpb.TaskEvents reply).
func TimelineSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "timeline") }

// ownersExitedSubject carries OwnersExited: owner processes that exited.
func ownersExitedSubject(prefix string) string { return prefix + ".owners.exited" }

// NodeStatsSubject is where node answers stats requests (a
// atollpb.NodeStatsRequest body, a atollpb.NodeStats reply).
func NodeStatsSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "stats") }

// NodeLogSubject is where node answers log requests (a
// atollpb.NodeLogRequest body, a atollpb.NodeLog reply: the end of its
// log file).
func NodeLogSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "logs") }

// ObjectsSubject is where node answers the head's AMM's inventory
// requests (a atollpb.ListObjectsRequest body, a atollpb.NodeObjects
// reply): one per AMM round.
func ObjectsSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "objects") }

// TaskSubject is where node takes tasks other nodes forward to it (a
// atollpb.ForwardTask body).
func TaskSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "task") }

// ResultSubject is where node takes the results of the work it forwarded
// (a atollpb.ForwardedResult body), refusals included.
func ResultSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "result") }

// LoadSubject carries node's load reports (atollpb.NodeLoad); a report
// with leaving set tells every node it left.
func LoadSubject(node ids.NodeID) string { return loadSubject(DefaultPrefix, node) }

// outputSubjects are the subjects of jobs' worker output,
// <prefix>.output.<job id>: nodes publish their workers' lines there and
// each job's driver (a node user too) subscribes to its own.
func outputSubjects(prefix string) string { return prefix + ".output.*" }
