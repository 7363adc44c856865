// Package microbench is `atoll microbenchmark`: Ray's `ray microbenchmark`
// set (python/ray/_private/ray_perf.py), with Ray's metric names, run on
// the embedded local cluster, each metric next to a baseline measured in
// the same run (see BENCHMARKS.md).
//
// # Measuring
//
// Like Ray's timeit, one metric is an operation ("op") repeated: a warm-up
// of Duration/2 sets a step (a tenth of the ops the warm-up managed, plus
// one), then each repetition runs steps of ops until at least Duration has
// passed and reports units per second (units: tasks, calls, puts, or
// gigabytes, as Ray's multiplier counts them). Repetitions of the baseline
// and of atoll alternate, so slow drifts of a shared machine hit both; the
// figure reported is the median of the repetitions, with their min and
// max. An op longer than Duration makes each repetition one op long: in
// process mode, multi_client_tasks_async (40,000 tasks, ~4 s on 2 cores)
// and n_n_actor_calls_async (~2 s).
//
// The two sync metrics (single_client_tasks_sync, 1_1_actor_calls_sync)
// are one round trip per op; each op of their repetitions is timed too,
// and their records carry the round trip's p50 and p99 in microseconds
// (config p50_us, p99_us, round_trips; the baseline's baseline_p50_us,
// baseline_p99_us); the table prints them under it.
//
// Rates keep Ray's metric names (so that output lines up with Ray's);
// their unit says the direction: "1/s" for ops per second, "GB/s" (10^9
// bytes per second) for the two put_gigabytes metrics. Higher is better,
// and so is a higher ratio = atoll / baseline.
//
// # Workloads (Ray's shapes)
//
// small_value is a no-op task returning []byte("ok"); Actor is an actor
// type whose methods return []byte("ok"); Client is an actor that calls
// Actors. Every ref is released as soon as its op no longer needs it, as
// Python's reference counting frees Ray's refs.
//
//	metric                                   one op                                                    units/op
//	single_client_tasks_sync                 Get(small_value.Remote())                                 1
//	single_client_tasks_async                1,000 small_value.Remote(), then GetAll                   1,000
//	multi_client_tasks_async                 4 Actors each submit 10,000 small_value tasks and get them 40,000
//	1_1_actor_calls_sync                     Get(a.small_value.Remote()) on one Actor                  1
//	1_1_actor_calls_async                    1,000 calls to one Actor, then GetAll                     1,000
//	1_1_actor_calls_concurrent               1,000 calls to one Actor, made by 16 goroutines, each     1,000
//	                                         call synchronous (16 in flight)
//	1_n_actor_calls_async                    one Client actor makes 5,000 calls to each of n Actors    5,000·n
//	n_n_actor_calls_async                    4 tasks each make 5,000 calls round-robin over n Actors   20,000
//	n_n_actor_calls_with_arg_async           n Clients, each Put(0) once and make 1,000 calls with     1,000·n
//	                                         that ref as argument to their own Actor
//	single_client_get_calls                  Get of one small object put once                          1
//	single_client_put_calls                  Put(0), then Release                                      1
//	multi_client_put_calls                   10 tasks each Put(0) and Release 100 times                1,000
//	single_client_put_gigabytes              Put of an 800 MiB []int64 (100·2^20 elements), Release    0.839 GB
//	multi_client_put_gigabytes               10 tasks each Put an 80 MiB []int64 10 times              8.39 GB
//	single_client_wait_1k_refs               1,000 small_value.Remote(), then 1,000 Wait(notReady, 1)  1
//	single_client_get_object_containing_10k_refs  Get of one object holding 10,000 refs to Put(1)      1
//
// n is max(1, CPUs/2), as Ray's n_cpu = cpu_count() // 2: one Actor on a
// 2-core machine.
//
// "Multi client" follows Ray, whose clients are actors and tasks: the
// clients are atoll actors (multi_client_tasks_async, 1_n and
// n_n_with_arg) and tasks (multi_client_put_calls, multi_client_put_gigabytes,
// n_n_actor_calls_async), so in process mode each client is a worker
// process, as in Ray. Clients reach their Actors by name (GetActor), as
// atoll actor handles cannot be passed as values.
//
// Where atoll differs from Ray's shape:
//   - 1_1_actor_calls_concurrent: Ray calls a threaded actor
//     (max_concurrency=16) 1,000 times asynchronously. atoll actors run one
//     call at a time, so the concurrency is on the caller side: 16
//     goroutines of the driver share the 1,000 calls, each making one
//     synchronous call at a time, so 16 calls are in flight.
//   - single_client_put_gigabytes: Ray counts each put of its
//     100·2^20-element int64 array as 0.8 GB; atoll counts its real size,
//     838,860,800 bytes = 0.839 GB, so Ray's accounting of the same speed
//     reads 4.9% lower. The array is written once before timing (Ray's
//     np.zeros leaves it as untouched zero pages).
//   - multi_client_put_gigabytes: each of Ray's do_put tasks allocates a
//     fresh np.zeros array per put (free: untouched zero pages); an atoll
//     task puts one array per process, written once, 10 times, so the
//     metric measures the put and not Go's zeroing of fresh memory.
//   - single_client_get_object_containing_10k_refs: Ray's object is the
//     return value of a task that put the 10,000 objects; atoll cannot yet
//     send a ref inside a value from one process to another, so the driver
//     puts the 10,000 objects and the list holding their refs.
//
// # Baselines
//
// Each metric's baseline does the same work without a runtime:
//   - tasks (and single_client_wait_1k_refs): plain goroutines and
//     channels. A pool of CPUs goroutines takes requests from a channel and
//     answers each on the caller's reply channel; one op is as many round
//     trips, with the same batching and the same number of client
//     goroutines.
//   - actor calls: raw protoactor-go requests (RootContext.RequestFuture
//     then Result) to echo actors in one actor system, with the same
//     batching, number of actors and client goroutines.
//   - put and get calls: a map from an id to a small value guarded by a
//     mutex: a get is a lookup, a put an insert plus the delete of its
//     release; for the object containing 10k refs, a lookup plus one
//     locked reference-count increment per contained id.
//   - put gigabytes: copy() of the same bytes into a destination of the
//     same size whose pages are already touched (as the store's are after
//     the first put), from the same number of goroutines as tasks run at
//     once (CPUs) for multi_client_put_gigabytes.
//
// # Profiling
//
// Options.CPUProfile (-cpuprofile) writes a CPU profile of the driver.
// Samples carry the labels metric=NAME and side=atoll|baseline (set on the
// running goroutine and inherited by the goroutines it starts), so
// `go tool pprof -tagignore side=baseline` keeps atoll's side and the
// runtime's own goroutines, and -tagfocus metric=NAME picks one metric.
//
// # Worker processes
//
// In process mode atoll starts worker processes by re-executing the
// running binary with the same arguments and ATOLL_WORKER=1; atoll.Init
// there serves tasks and never returns. Run therefore calls atoll.Init
// before any other work and prints nothing before it, and the remote
// functions and actor types live in package variables (remote.go), so
// every process of the binary registers them.
package microbench
