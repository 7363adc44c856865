package memsample

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// WriteCSV writes the samples as CSV: a header line ("seconds", one
// column per node named by Series.Label in the order of Nodes, "total"),
// then one line per sample: its offset from the first in seconds (to the
// millisecond), each node's used bytes (an empty cell where the node was
// absent: not yet joined, dead, or not reporting) and the cluster total.
func (s *Samples) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	rec := make([]string, 0, len(s.Nodes)+2)
	rec = append(rec, "seconds")
	for i := range s.Nodes {
		rec = append(rec, s.Nodes[i].Label())
	}
	rec = append(rec, "total")
	if err := cw.Write(rec); err != nil {
		return err
	}
	for i, at := range s.Times {
		rec = rec[:0]
		rec = append(rec, seconds(at))
		for _, n := range s.Nodes {
			if n.Present[i] {
				rec = append(rec, strconv.FormatUint(n.Used[i], 10))
			} else {
				rec = append(rec, "")
			}
		}
		rec = append(rec, strconv.FormatUint(s.Total[i], 10))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// seconds formats d in seconds with three decimals.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', 3, 64)
}
