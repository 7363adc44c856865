package memsample

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// threeNodes: a head throughout, a worker that leaves after sample 2, a
// driver that joins at sample 1; about 300 MiB at the peak.
func threeNodes() *Samples {
	tb := newTable(100, 10)
	const mib = 1 << 20
	tb.add(0, []Reading{reading("aaaaaaaa11", RoleHead, 10*mib), reading("bbbbbbbb22", RoleWorker, 0)})
	tb.add(500*time.Millisecond, []Reading{reading("aaaaaaaa11", RoleHead, 10*mib), reading("bbbbbbbb22", RoleWorker, 100*mib), reading("cccccccc33", RoleDriver, 64*mib)})
	tb.add(1000*time.Millisecond, []Reading{reading("aaaaaaaa11", RoleHead, 110*mib), reading("bbbbbbbb22", RoleWorker, 100*mib), reading("cccccccc33", RoleDriver, 64*mib)})
	tb.add(1500*time.Millisecond, []Reading{reading("aaaaaaaa11", RoleHead, 110*mib), reading("cccccccc33", RoleDriver, 64*mib)})
	return tb.samples(time.Unix(0, 0), 500*time.Millisecond, 0)
}

func TestWriteCSV(t *testing.T) {
	var out bytes.Buffer
	if err := threeNodes().WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	want := `seconds,aaaaaaaa (head),bbbbbbbb (worker),cccccccc (driver),total
0.000,10485760,0,,10485760
0.500,10485760,104857600,67108864,182452224
1.000,115343360,104857600,67108864,287309824
1.500,115343360,,67108864,182452224
`
	if out.String() != want {
		t.Fatalf("CSV:\n%s\nwant:\n%s", out.String(), want)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != 5 {
		t.Fatalf("CSV does not parse back: %d records, %v", len(recs), err)
	}

	// No samples: the header only.
	out.Reset()
	if err := (&Samples{}).WriteCSV(&out); err != nil || out.String() != "seconds,total\n" {
		t.Fatalf("empty: %q, %v", out.String(), err)
	}
}

// svgDoc is what the tests read back from an SVG.
type svgDoc struct {
	paths   []map[string]string // attributes of the series paths
	texts   []string
	root    string
	hasJS   bool
	hasHref bool
}

// parseSVG checks that b is well-formed XML and collects its series paths
// and texts.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	dec := xml.NewDecoder(bytes.NewReader(b))
	var inText bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, b)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if doc.root == "" {
				doc.root = e.Name.Space + " " + e.Name.Local
			}
			attrs := map[string]string{}
			for _, a := range e.Attr {
				attrs[a.Name.Local] = a.Value
				if a.Name.Local == "href" || strings.HasPrefix(a.Name.Local, "on") {
					doc.hasHref = true
				}
			}
			switch e.Name.Local {
			case "path":
				if strings.Contains(attrs["class"], "series") {
					doc.paths = append(doc.paths, attrs)
				}
			case "script", "image", "foreignObject":
				doc.hasJS = true
			case "text":
				inText = true
			}
		case xml.EndElement:
			if e.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText {
				doc.texts = append(doc.texts, string(e))
			}
		}
	}
	return doc
}

func TestWriteSVG(t *testing.T) {
	s := threeNodes()
	var out bytes.Buffer
	if err := s.WriteSVG(&out, SVGOptions{Title: "AMM <off> & on"}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes())
	if doc.root != "http://www.w3.org/2000/svg svg" || doc.hasJS || doc.hasHref {
		t.Fatalf("root %q, scripts or external resources %v %v", doc.root, doc.hasJS, doc.hasHref)
	}
	if len(doc.paths) != 4 {
		t.Fatalf("%d series paths, want 3 nodes and the total", len(doc.paths))
	}
	for i, id := range []string{"aaaaaaaa11", "bbbbbbbb22", "cccccccc33", "total"} {
		p := doc.paths[i]
		if p["data-node"] != id || !strings.HasPrefix(p["d"], "M") {
			t.Errorf("path %d: %v, want node %s", i, p, id)
		}
	}
	total := doc.paths[3]
	if total["stroke-width"] != "3" || doc.paths[0]["stroke-width"] != "1.5" {
		t.Errorf("the total's line is not the thicker: %s vs %s", total["stroke-width"], doc.paths[0]["stroke-width"])
	}
	if n := strings.Count(total["d"], "L") + 1; n != 4 {
		t.Errorf("total path %q: %d points, want 4", total["d"], n)
	}
	// The worker leaves after sample 2 and the driver joins at sample 1:
	// one run each, of 3 points.
	for _, p := range doc.paths[1:3] {
		if strings.Count(p["d"], "M") != 1 || strings.Count(p["d"], "L") != 2 {
			t.Errorf("path of %s: %q, want one run of 3 points", p["data-node"], p["d"])
		}
	}
	all := strings.Join(doc.texts, "\n")
	for _, want := range []string{"AMM <off> & on", "total (peak 274 MiB)", "aaaaaaaa (head) peak 110 MiB", "bbbbbbbb (worker) peak 100 MiB",
		"cccccccc (driver) peak 64 MiB", "seconds", "0 MiB", "300 MiB", "0.2", "1.6"} {
		if !strings.Contains(all, want) {
			t.Errorf("SVG texts lack %q:\n%s", want, all)
		}
	}
}

// A node absent in the middle of a run breaks its line in two; a lone
// present sample is a dot.
func TestWriteSVGGaps(t *testing.T) {
	tb := newTable(100, 10)
	for i := range 7 {
		r := []Reading{reading("h", RoleHead, 1)}
		if i != 2 && i != 4 && i != 5 {
			r = append(r, reading("w", RoleWorker, uint64(i)))
		}
		tb.add(time.Duration(i)*time.Second, r)
	}
	var out bytes.Buffer
	if err := tb.samples(time.Time{}, time.Second, 0).WriteSVG(&out, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes())
	w := doc.paths[1]["d"]
	if strings.Count(w, "M") != 3 || strings.Count(w, "h0") != 2 {
		t.Errorf("worker path %q: want runs [0 1], [3] (a dot), [6] (a dot)", w)
	}
}

// Many samples are drawn with a bounded number of points, and the peak
// still shows.
func TestWriteSVGManySamples(t *testing.T) {
	tb := newTable(1<<20, 10)
	const n = 200_000
	for i := range n {
		used := uint64(1 << 20)
		if i == 123_457 {
			used = 1 << 30
		}
		tb.add(time.Duration(i)*time.Millisecond, []Reading{reading("h", RoleHead, used)})
	}
	s := tb.samples(time.Time{}, time.Millisecond, 0)
	var out bytes.Buffer
	if err := s.WriteSVG(&out, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	if out.Len() > 200_000 {
		t.Errorf("SVG of %d bytes for %d samples", out.Len(), n)
	}
	doc := parseSVG(t, out.Bytes())
	total := doc.paths[1]["d"]
	p := newPlot(s, SVGOptions{Width: 960, Height: 540})
	peakY := strconv.FormatFloat(p.y(1<<30), 'f', 1, 64)
	if !strings.Contains(total, " "+peakY+" ") && !strings.HasSuffix(total, " "+peakY) {
		t.Errorf("the peak (y=%s) is not drawn: %.200s...", peakY, total)
	}
	if pts := strings.Count(total, "L") + 1; pts > 2*int(p.x1-p.x0) {
		t.Errorf("%d points drawn", pts)
	}
}

func TestWriteSVGEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := (&Samples{}).WriteSVG(&out, SVGOptions{Width: 10, Height: 10}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes())
	if len(doc.paths) != 1 || doc.paths[0]["data-node"] != "total" {
		t.Errorf("paths %v, want the total's (empty)", doc.paths)
	}
	if !strings.Contains(strings.Join(doc.texts, "\n"), "no samples") {
		t.Errorf("texts %q", doc.texts)
	}
	if !strings.Contains(out.String(), `width="480" height="320"`) {
		t.Errorf("not clamped to the minimum size: %.300s", out.String())
	}
}

func TestTicksAndUnits(t *testing.T) {
	for _, tc := range []struct {
		top  uint64
		unit string
		last float64
	}{
		{1, "B", 1}, {1000, "B", 1000}, {1 << 20, "MiB", 1}, {300 << 20, "MiB", 300}, {700 << 20, "MiB", 800},
		{3 << 29, "GiB", 1.5}, {5 << 40, "TiB", 5},
	} {
		unit, name := byteUnit(tc.top)
		ts := ticks(float64(tc.top)/unit, 5)
		if name != tc.unit || ts[0] != 0 || ts[len(ts)-1] != tc.last || len(ts) > 12 {
			t.Errorf("%d bytes: unit %s, ticks %v; want %s up to %g", tc.top, name, ts, tc.unit, tc.last)
		}
	}
	for n, want := range map[uint64]string{0: "0 B", 1536: "1.5 KiB", 300 << 20: "300 MiB", 3 << 29: "1.5 GiB"} {
		if got := benchfmt.HumanSize(n); got != want {
			t.Errorf("benchfmt.HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
