package benchfmt

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// ParseLines reads the JSON lines a benchmark program printed with -json,
// each as a generic map (the tests of the samples check their fields).
func ParseLines(r io.Reader) ([]map[string]any, error) {
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("line %q is not JSON: %w", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// ByMetric is ParseLines keyed by each record's metric (the last record
// of a metric wins).
func ByMetric(r io.Reader) (map[string]map[string]any, error) {
	recs, err := ParseLines(r)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(recs))
	for _, rec := range recs {
		m, _ := rec["metric"].(string)
		out[m] = rec
	}
	return out, nil
}
