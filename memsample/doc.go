// Package memsample samples the object-store use of a cluster's nodes over
// time, after Dask's MemorySampler: a Sampler records, every interval,
// each live node's store (bytes used, capacity, bytes spilled to disk
// now) and the cluster total (the sum of the nodes' used bytes), and the
// Samples it returns give the peak (Peak), a CSV table (WriteCSV) and a
// self-contained SVG line plot (WriteSVG): one line per node and a
// thicker one for the cluster total. Measuring a workload's peak cluster
// store use with the Active Memory Manager on and off is what it is for.
//
//	s, err := memsample.New(nc, memsample.Options{Interval: 100 * time.Millisecond})
//	err = s.Start(ctx) // returns once the first sample is taken
//	... run the workload ...
//	samples := s.Stop()
//	fmt.Println(samples.Peak().Bytes)
//	err = samples.WriteSVG(f, memsample.SVGOptions{})
//
// A driver gets one with atolltest.SampleMemory, the CLI with `atoll memory
// --sample INTERVAL -o FILE`.
//
// # Where the samples come from
//
// New samples the cluster a NATS connection reaches. Every cluster node
// (head, workers, drivers' nodes) publishes a load report
// (atollpb.NodeLoad, with its store's statistics) on "atoll.load.<node>"
// every 100 ms; the sampler subscribes to them and keeps the latest report
// of each node, and lists the nodes from the GCS at most once a second.
// A sample holds every node whose latest report is less than 3 s old
// (StaleAfter) and that the GCS does not list dead: a node that died or
// left drops out (its cells are empty from then on; a leaving node's last
// report removes it at once), one that joins appears. A report that
// does not decode, has no valid node id or arrives on another node's
// subject is skipped (logged at debug level). NewFromSource samples
// whatever a Source reads instead: atolltest.SampleMemory uses one for the
// store of a driver's embedded single node, which publishes no reports.
//
// # Goroutines and bounds
//
// A started Sampler runs one goroutine: it takes the reports from a
// buffered channel subscription (1024 messages; reports that find it full
// are dropped by NATS, and the next one arrives 100 ms later), lists the
// nodes (each list at most 2 s; on failure it keeps the last list), and
// samples on its ticker. Start first waits, at most 2 s, for a report of
// every node the GCS lists alive, then takes the first sample. It ends when Stop is called, the context given
// to Start ends, or the NATS connection closes; Stop waits for it and
// removes the subscription.
//
// The table of latest reports holds at most MaxNodes nodes (reports of
// others are dropped and counted). A sampler keeps at most MaxSamples
// samples (default 1<<20, and fewer when many nodes make each sample
// large: at most 1<<22 node cells in all), so it runs in bounded memory
// however long it samples: when the table is full, adjacent samples are
// merged pairwise and every later sample stands for twice as many ticks
// (Samples.Stride). A merged sample carries the time of its first tick and
// the maximum of every value over its ticks, the cluster total included,
// so decimation never lowers a peak. At most MaxNodes nodes get a
// column over a run; the total still counts the others
// (Samples.UntrackedNodes says how many there were). WriteSVG draws at
// most two points (a minimum and a maximum) per pixel column, and the
// SVG it writes needs no script or external resource.
//
// Sampler.mu guards the table and the progress counters; it is a leaf,
// never held across a read or I/O. A driver's samplers
// (atolltest.SampleMemory) are stopped by its Shutdown before its node.
package memsample
