package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// storeReport is the end-of-run state of the stores.
type storeReport struct {
	// Nodes counts the nodes checked (alive and reporting); Dead the
	// nodes the cluster declared dead.
	Nodes, Dead int
	// Left describes what a node still held at the deadline.
	Left     []string
	Verified error // nil: every store empty, no spill file anywhere
	// Waited is how long the stores took to empty.
	Waited time.Duration
	// Spilled and Restored are the bytes the live nodes spilled and
	// restored over the run (a killed node's are gone with it).
	Spilled, Restored uint64
	// ReadsAfterFree sums the live nodes' reads after free (Gets of an
	// object its owner had freed: clusterclient.NodeStatus.ReadsAfterFree);
	// NoReadAfterFree is nil when it is 0, else it names the nodes.
	ReadsAfterFree  uint64
	NoReadAfterFree error
}

// storesPollInterval is how often checkStores reads the cluster's
// status (nodes report every 100 ms).
const storesPollInterval = 200 * time.Millisecond

// checkStores waits (up to within) until every live node's store, the
// driver's included, holds no object, no byte and no spill file, and
// every node in victims was declared dead. Bank branches hold no store
// objects, so they may stay alive.
func checkStores(ctx context.Context, address, secret string, victims []string, within time.Duration) storeReport {
	start := time.Now()
	deadline := start.Add(within)
	for {
		rep, err := storesOnce(ctx, address, secret, victims)
		if err == nil && rep.Verified == nil {
			rep.Waited = time.Since(start)
			return rep
		}
		if err != nil {
			rep.Verified, rep.NoReadAfterFree = err, err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			rep.Waited = time.Since(start)
			return rep
		}
		select {
		case <-ctx.Done():
		case <-time.After(storesPollInterval):
		}
	}
}

func storesOnce(ctx context.Context, address, secret string, victims []string) (storeReport, error) {
	st, err := clusterclient.GetStatus(ctx, address, nodeconfig.Credentials{Secret: secret})
	if err != nil {
		return storeReport{}, err
	}
	rep := judgeStores(st, victims)
	// The driver's own view of its store (also in the status above).
	if m, err := atolltest.Memory(ctx); err == nil && (m.StoreUsed != 0 || m.SpillFiles != 0) {
		rep.Left = append(rep.Left, fmt.Sprintf("driver: %d bytes used, %d spill files", m.StoreUsed, m.SpillFiles))
	}
	if len(rep.Left) > 0 {
		rep.Verified = fmt.Errorf("not back to zero: %s", strings.Join(rep.Left, "; "))
	}
	return rep, nil
}

// judgeStores checks a cluster status: what each live node's store still
// holds, whether every victim was declared dead, and the reads after
// free. A node killed by the plan takes its counters with it: its reads
// after free are not seen.
func judgeStores(st *clusterclient.Status, victims []string) storeReport {
	var rep storeReport
	var freedReads []string
	dead := map[string]bool{}
	for _, n := range st.Nodes {
		switch {
		case !n.Alive:
			rep.Dead++
			dead[n.NodeID] = true
		case !n.Reporting:
			rep.Left = append(rep.Left, fmt.Sprintf("%s: no load report", short(n.NodeID)))
		default:
			rep.Nodes++
			rep.Spilled += n.SpilledTotal
			rep.Restored += n.RestoredTotal
			if n.ReadsAfterFree > 0 {
				rep.ReadsAfterFree += n.ReadsAfterFree
				freedReads = append(freedReads, fmt.Sprintf("%s: %d", short(n.NodeID), n.ReadsAfterFree))
			}
			if n.StoreUsed != 0 || n.Objects != 0 || n.SpillFiles != 0 || n.SpilledBytes != 0 {
				rep.Left = append(rep.Left, fmt.Sprintf("%s: %d objects, %d bytes used, %d spill files (%d bytes)",
					short(n.NodeID), n.Objects, n.StoreUsed, n.SpillFiles, n.SpilledBytes))
			}
		}
	}
	for _, v := range victims {
		if !dead[v] {
			rep.Left = append(rep.Left, fmt.Sprintf("%s: killed, not declared dead yet", short(v)))
		}
	}
	if len(freedReads) > 0 {
		rep.NoReadAfterFree = fmt.Errorf("%d read(s) of objects their owner had freed: %s", rep.ReadsAfterFree, strings.Join(freedReads, "; "))
	}
	return rep
}

// short is a node id's first 8 hex digits.
func short(id string) string { return id[:min(8, len(id))] }
