package microbench

import (
	"context"
	"fmt"
	"regexp"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/actors"
)

// shapes are the workloads' sizes: Ray's (rayShapes) for the command, tiny
// ones in tests.
type shapes struct {
	batch               int // tasks and calls of one async batch; refs of wait_1k (1,000)
	multiTaskClients    int // multi_client_tasks_async clients (4)
	multiTasksPerClient int // tasks each of them submits (10,000)
	concurrency         int // goroutines of 1_1_actor_calls_concurrent (16, Ray's max_concurrency)
	oneNCalls           int // 1_n calls to each Actor (5,000)
	nnClients           int // n_n client tasks (4)
	nnCalls             int // calls of each n_n client (5,000)
	nnArgCalls          int // calls of each n_n_with_arg client (1,000)
	putClients          int // multi_client_put_calls tasks (10)
	putsPerClient       int // puts of each (100)
	largeElems          int // int64s of single_client_put_gigabytes' array (100 Mi: 800 MiB)
	largeClients        int // multi_client_put_gigabytes tasks (10)
	largePuts           int // puts of each (10)
	largeClientElems    int // int64s of each of their arrays (10 Mi: 80 MiB)
	containedRefs       int // refs in the object of get_object_containing_10k_refs (10,000)
	placementGroups     int // groups of one placement_group_create/removal op (100)
}

// rayShapes are the sizes of Ray's ray_perf.py.
var rayShapes = shapes{
	batch: 1000, multiTaskClients: 4, multiTasksPerClient: 10000, concurrency: 16,
	oneNCalls: 5000, nnClients: 4, nnCalls: 5000, nnArgCalls: 1000,
	putClients: 10, putsPerClient: 100, largeElems: 100 << 20,
	largeClients: 10, largePuts: 10, largeClientElems: 10 << 20, containedRefs: 10000,
	placementGroups: 100,
}

// metric is one of Ray's microbenchmarks: how to set up atoll's side and
// the baseline's.
type metric struct {
	name     string // Ray's name
	unit     string // "1/s" or "GB/s"
	baseline string // what the baseline measures
	// shape returns the parameters of the workload, for the config.
	shape func(e *env) map[string]any
	atoll func(ctx context.Context, e *env) (*workload, error)
	base  func(ctx context.Context, e *env) (*workload, error)
}

// Baseline names.
const (
	baseChannels   = "goroutine_channel_round_trips_per_s"
	baseProtoactor = "protoactor_requests_per_s"
	baseMutexMap   = "mutex_map_ops_per_s"
	baseMemcpy     = "memcpy_gb_per_s"
	baseKV         = "jetstream_kv_put_purge_per_s"
)

// metrics lists Ray's microbenchmarks in the order ray microbenchmark
// prints them.
var metrics = []metric{
	{"single_client_get_calls", "1/s", baseMutexMap, noShape, getCalls, getCallsBase},
	{"single_client_put_calls", "1/s", baseMutexMap, noShape, putCalls, putCallsBase},
	{"multi_client_put_calls", "1/s", baseMutexMap, multiPutCallsShape, multiPutCalls, multiPutCallsBase},
	{"single_client_put_gigabytes", "GB/s", baseMemcpy, putGigabytesShape, putGigabytes, putGigabytesBase},
	{"multi_client_put_gigabytes", "GB/s", baseMemcpy, multiPutGigabytesShape, multiPutGigabytes, multiPutGigabytesBase},
	{"single_client_get_object_containing_10k_refs", "1/s", baseMutexMap, containingShape, getContaining, getContainingBase},
	{"single_client_wait_1k_refs", "1/s", baseChannels, batchShape, wait1k, wait1kBase},
	{"single_client_tasks_sync", "1/s", baseChannels, noShape, tasksSync, tasksSyncBase},
	{"single_client_tasks_async", "1/s", baseChannels, batchShape, tasksAsync, tasksAsyncBase},
	{"multi_client_tasks_async", "1/s", baseChannels, multiTasksShape, multiTasks, multiTasksBase},
	{"1_1_actor_calls_sync", "1/s", baseProtoactor, noShape, actorSync, actorSyncBase},
	{"1_1_actor_calls_async", "1/s", baseProtoactor, batchShape, actorAsync, actorAsyncBase},
	{"1_1_actor_calls_concurrent", "1/s", baseProtoactor, concurrentShape, actorConcurrent, actorConcurrentBase},
	{"1_n_actor_calls_async", "1/s", baseProtoactor, oneNShape, oneN, oneNBase},
	{"n_n_actor_calls_async", "1/s", baseProtoactor, nnShape, nn, nnBase},
	{"n_n_actor_calls_with_arg_async", "1/s", baseProtoactor, nnArgShape, nnArg, nnArgBase},
	{"placement_group_create/removal", "1/s", baseKV, placementShape, placementGroups, placementGroupsBase},
}

// Names returns the metric names, in the order they run.
func Names() []string {
	names := make([]string, len(metrics))
	for i, m := range metrics {
		names[i] = m.name
	}
	return names
}

// selectMetrics returns the metrics whose name filter matches (all when
// filter is nil).
func selectMetrics(filter *regexp.Regexp) []metric {
	var out []metric
	for _, m := range metrics {
		if filter == nil || filter.MatchString(m.name) {
			out = append(out, m)
		}
	}
	return out
}

// env is what the workloads of one run share.
type env struct {
	shapes shapes
	cpus   int

	sysOnce sync.Once
	sys     *actor.ActorSystem // the baselines' actor system, started on first use

	kv kvEnv // the placement baseline's NATS server, started on first use

	mu        sync.Mutex
	actorSeq  int
	bigSource []int64 // single_client_put_gigabytes' array, shared by atoll and its baseline
}

// servers is max(1, CPUs/2), Ray's n_cpu = cpu_count() // 2.
func (e *env) servers() int { return max(1, e.cpus/2) }

// actorSystem returns the baselines' protoactor system.
func (e *env) actorSystem() *actor.ActorSystem {
	e.sysOnce.Do(func() { e.sys = actors.NewSystem(nil) })
	return e.sys
}

func (e *env) close() {
	if e.sys != nil {
		e.sys.Shutdown()
	}
	e.kv.close()
}

// actorName returns a name no actor of this run has had.
func (e *env) actorName(kind string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.actorSeq++
	return fmt.Sprintf("microbench.%s.%d", kind, e.actorSeq)
}

// bigArray returns single_client_put_gigabytes' array, written once.
func (e *env) bigArray() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.bigSource) != e.shapes.largeElems {
		e.bigSource = filledInt64s(e.shapes.largeElems)
	}
	return e.bigSource
}

// freeBigArray lets the collector take single_client_put_gigabytes'
// array once the metric is done.
func (e *env) freeBigArray(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bigSource = nil
	return nil
}

func noShape(*env) map[string]any { return nil }

func batchShape(e *env) map[string]any { return map[string]any{"batch": e.shapes.batch} }
