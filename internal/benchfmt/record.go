// Package benchfmt writes benchmark results in the line format of
// BENCHMARKS.md: one JSON object per measurement and line,
// each next to a baseline measured in the same run, with their ratio and
// the configuration that produced it. It also parses and formats the byte
// sizes that benchmark programs take as flags, and names the atoll version
// recorded in each configuration.
package benchfmt

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"sync"
)

// Record is one measurement, marshalled as
//
//	{"bench":"broadcast","metric":"wall_s","value":7.9,"unit":"s",
//	 "baseline":"ideal_parallel_compute_s","baseline_value":7.5,"ratio":1.05,
//	 "verified":true,"config":{...}}
//
// ratio is omitted when BaselineValue is 0 (no meaningful ratio); verified
// is omitted when Verified is nil; config is {} when Config is nil.
type Record struct {
	Bench         string         // benchmark name, e.g. "broadcast"
	Metric        string         // metric name with its unit suffix: wall_s, ops_per_s, peak_pss_bytes
	Value         float64        // the measurement
	Unit          string         // unit of Value and BaselineValue: "s", "bytes", "1/s"
	Baseline      string         // what the baseline measures
	BaselineValue float64        // the baseline, measured in the same run
	Ratio         float64        // Value / BaselineValue; 0 when BaselineValue is 0
	Verified      *bool          // nil unless the benchmark checked its output
	Config        map[string]any // every parameter that changes the result
}

// NewRecord returns a record with Ratio = value / baselineValue (0, and so
// omitted from the JSON, when baselineValue is 0). config is used as is,
// not copied.
func NewRecord(bench, metric string, value float64, unit, baseline string, baselineValue float64, config map[string]any) Record {
	r := Record{
		Bench: bench, Metric: metric, Value: value, Unit: unit,
		Baseline: baseline, BaselineValue: baselineValue, Config: config,
	}
	if baselineValue != 0 {
		r.Ratio = value / baselineValue
	}
	return r
}

// WithVerified returns a copy of r that reports whether its output was
// checked and found correct. Call it only after actually checking.
func (r Record) WithVerified(ok bool) Record {
	r.Verified = &ok
	return r
}

// WithConfig returns a copy of r whose config also holds kv (kv wins on
// duplicate keys). r's own map is not modified.
func (r Record) WithConfig(kv map[string]any) Record {
	c := make(map[string]any, len(r.Config)+len(kv))
	maps.Copy(c, r.Config)
	maps.Copy(c, kv)
	r.Config = c
	return r
}

// wireRecord fixes the JSON keys and their order.
type wireRecord struct {
	Bench         string         `json:"bench"`
	Metric        string         `json:"metric"`
	Value         float64        `json:"value"`
	Unit          string         `json:"unit"`
	Baseline      string         `json:"baseline"`
	BaselineValue float64        `json:"baseline_value"`
	Ratio         *float64       `json:"ratio,omitempty"`
	Verified      *bool          `json:"verified,omitempty"`
	Config        map[string]any `json:"config"`
}

// MarshalJSON encodes r with the keys of benchmarks.md. It fails on NaN or
// infinite values, which JSON cannot carry.
func (r Record) MarshalJSON() ([]byte, error) {
	w := wireRecord{
		Bench: r.Bench, Metric: r.Metric, Value: r.Value, Unit: r.Unit,
		Baseline: r.Baseline, BaselineValue: r.BaselineValue,
		Verified: r.Verified, Config: r.Config,
	}
	if r.BaselineValue != 0 {
		w.Ratio = &r.Ratio
	}
	if w.Config == nil {
		w.Config = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // config strings (paths, commands) stay readable
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes a line written by MarshalJSON.
func (r *Record) UnmarshalJSON(data []byte) error {
	var w wireRecord
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Record{
		Bench: w.Bench, Metric: w.Metric, Value: w.Value, Unit: w.Unit,
		Baseline: w.Baseline, BaselineValue: w.BaselineValue,
		Verified: w.Verified, Config: w.Config,
	}
	if w.Ratio != nil {
		r.Ratio = *w.Ratio
	}
	return nil
}

// Writer writes records as JSON lines. It is safe for concurrent use; each
// record is written with one Write call on the underlying writer.
type Writer struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewWriter returns a Writer that writes to w (os.Stdout for -json output).
func NewWriter(w io.Writer) *Writer {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &Writer{enc: enc}
}

// Write writes r followed by a newline.
func (w *Writer) Write(r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(r)
}

// WriteAll writes records to out as JSON lines, in order, stopping at the
// first error. It is what a sample's -json flag prints.
func WriteAll(out io.Writer, records []Record) error {
	w := NewWriter(out)
	for _, r := range records {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return nil
}
