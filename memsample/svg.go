package memsample

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// SVGOptions configures WriteSVG. Zero fields take the defaults.
type SVGOptions struct {
	// Title is drawn above the plot (default "Object store use").
	Title string
	// Width and Height are the image's size in pixels (default 960×540,
	// at least 480×320).
	Width, Height int
}

// The plot's layout, in pixels.
const (
	svgMarginLeft   = 90
	svgMarginRight  = 250 // the legend
	svgMarginTop    = 50
	svgMarginBottom = 60
	svgLegendLine   = 20 // height of one legend entry
)

// palette colours the nodes' lines (Tableau 10), in turn.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// WriteSVG draws the samples as a self-contained SVG line plot (no
// scripts, no external resources): seconds on the x axis, bytes used on
// the y axis (binary units), one line per node (its Label; a gap where the
// node was absent) and a thicker black line for the cluster total, a
// legend with each line's peak, and the title. Every line is one <path>
// element of class "series" (and "total" or "node"), data-node naming
// its node's id or "total". With more samples than the plot is pixels
// wide, each pixel's samples are drawn by their minimum and maximum, so
// every peak shows.
func (s *Samples) WriteSVG(w io.Writer, opts SVGOptions) error {
	if opts.Title == "" {
		opts.Title = "Object store use"
	}
	if opts.Width == 0 {
		opts.Width = 960
	}
	if opts.Height == 0 {
		opts.Height = 540
	}
	opts.Width, opts.Height = max(opts.Width, 480), max(opts.Height, 320)
	p := newPlot(s, opts)
	var b strings.Builder
	p.draw(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// plot maps samples to the drawing area.
type plot struct {
	s              *Samples
	opts           SVGOptions
	x0, x1, y0, y1 float64 // the plot area: x0 left, y0 top
	tMax           float64 // seconds at x1
	yTicks         []float64
	yUnit          float64
	yUnitName      string
	xTicks         []float64
}

func newPlot(s *Samples, opts SVGOptions) *plot {
	p := &plot{s: s, opts: opts, x0: svgMarginLeft, x1: float64(opts.Width - svgMarginRight),
		y0: svgMarginTop, y1: float64(opts.Height - svgMarginBottom)}
	if n := len(s.Times); n > 0 {
		p.tMax = s.Times[n-1].Seconds()
	}
	if p.tMax <= 0 {
		p.tMax = 1
	}
	p.xTicks = ticks(p.tMax, 8)
	p.tMax = max(p.tMax, p.xTicks[len(p.xTicks)-1])
	var top uint64 = 1
	for _, v := range s.Total {
		top = max(top, v)
	}
	for i := range s.Nodes {
		for _, v := range s.Nodes[i].Used {
			top = max(top, v)
		}
	}
	p.yUnit, p.yUnitName = byteUnit(top)
	p.yTicks = ticks(float64(top)/p.yUnit, 5)
	return p
}

// ticks returns nice tick values from 0 to at least top, about n steps.
func ticks(top float64, n int) []float64 {
	step := niceStep(top / float64(n))
	var out []float64
	for i := 0; ; i++ {
		// Rounded to 12 digits: 3 × 0.1 is 0.3, not 0.30000000000000004.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(i)*step, 'g', 12, 64), 64)
		out = append(out, v)
		if v >= top*(1-1e-9) {
			return out
		}
	}
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if x <= m*e*(1+1e-9) {
			return m * e
		}
	}
	return 10 * e
}

// byteUnit is the binary unit to label an axis up to top bytes in.
func byteUnit(top uint64) (float64, string) {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u, v := 0, float64(top)
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return math.Pow(1024, float64(u)), units[u]
}

// formatNum formats v with at most prec decimals, trailing zeros trimmed.
func formatNum(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func (p *plot) x(t time.Duration) float64 { return p.x0 + t.Seconds()/p.tMax*(p.x1-p.x0) }

func (p *plot) y(bytes uint64) float64 {
	top := p.yTicks[len(p.yTicks)-1] * p.yUnit
	return p.y1 - float64(bytes)/top*(p.y1-p.y0)
}

func (p *plot) draw(b *strings.Builder) {
	w, h := p.opts.Width, p.opts.Height
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(p.opts.Title))
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(b, `<text x="%.1f" y="28" text-anchor="middle" font-size="16" font-weight="bold">%s</text>`+"\n", (p.x0+p.x1)/2, esc(p.opts.Title))

	// Axes, grid and labels.
	b.WriteString(`<g class="axes" stroke="#cccccc" stroke-width="1">` + "\n")
	for _, v := range p.yTicks {
		y := p.y(uint64(math.Round(v * p.yUnit)))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", p.x0, y, p.x1, y)
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", p.x0, p.y0, p.x0, p.y1)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", p.x0, p.y1, p.x1, p.y1)
	b.WriteString("</g>\n")
	b.WriteString(`<g class="labels" fill="#333333">` + "\n")
	for _, v := range p.yTicks {
		y := p.y(uint64(math.Round(v * p.yUnit)))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s %s</text>`+"\n", p.x0-6, y, formatNum(v, 2), p.yUnitName)
	}
	for _, v := range p.xTicks {
		x := p.x0 + v/p.tMax*(p.x1-p.x0)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, p.y1+18, formatNum(v, 3))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds</text>`+"\n", (p.x0+p.x1)/2, p.y1+42)
	fmt.Fprintf(b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">object store used</text>`+"\n", (p.y0+p.y1)/2, (p.y0+p.y1)/2)
	if len(p.s.Times) == 0 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">no samples</text>`+"\n", (p.x0+p.x1)/2, (p.y0+p.y1)/2)
	}
	b.WriteString("</g>\n")

	// The lines: nodes first, the total on top.
	b.WriteString(`<g class="lines" fill="none" stroke-linejoin="round" stroke-linecap="round">` + "\n")
	all := make([]bool, len(p.s.Times))
	for i := range all {
		all[i] = true
	}
	for i := range p.s.Nodes {
		n := &p.s.Nodes[i]
		fmt.Fprintf(b, `<path class="series node" data-node="%s" stroke="%s" stroke-width="1.5" d="%s"/>`+"\n",
			esc(n.NodeID), palette[i%len(palette)], p.pathData(n.Used, n.Present))
	}
	fmt.Fprintf(b, `<path class="series total" data-node="total" stroke="#000000" stroke-width="3" d="%s"/>`+"\n", p.pathData(p.s.Total, all))
	b.WriteString("</g>\n")

	p.drawLegend(b)
	b.WriteString("</svg>\n")
}

// drawLegend lists the total and the nodes, each with its peak, as many
// as fit in the plot's height.
func (p *plot) drawLegend(b *strings.Builder) {
	type entry struct {
		label, color string
		width        float64
	}
	entries := []entry{{"total (peak " + benchfmt.HumanSize(p.s.Peak().Bytes) + ")", "#000000", 3}}
	for i := range p.s.Nodes {
		n := &p.s.Nodes[i]
		entries = append(entries, entry{n.Label() + " peak " + benchfmt.HumanSize(n.Peak(p.s.Times).Bytes), palette[i%len(palette)], 1.5})
	}
	fits := max(int((p.y1-p.y0)/svgLegendLine), 2)
	more := 0
	if len(entries) > fits {
		more = len(entries) - (fits - 1)
		entries = entries[:fits-1]
	}
	x := p.x1 + 20
	b.WriteString(`<g class="legend">` + "\n")
	for i, e := range entries {
		y := p.y0 + 10 + float64(i*svgLegendLine)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"/>`+"\n", x, y, x+24, y, e.color, e.width)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", x+30, y, esc(e.label))
	}
	if more > 0 {
		y := p.y0 + 10 + float64(len(entries)*svgLegendLine)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">… and %d more nodes</text>`+"\n", x+30, y, more)
	}
	b.WriteString("</g>\n")
}

// pathData is a path's d attribute for values at the samples' times,
// broken where present is false. With more samples than twice the plot's
// width in pixels, the samples are drawn in groups, one per pixel: each
// group by its minimum and maximum, in time order (absent samples in a
// group that has present ones are skipped).
func (p *plot) pathData(values []uint64, present []bool) string {
	n := len(values)
	width := int(p.x1 - p.x0)
	group := 1
	if n > 2*width {
		group = (n + width - 1) / width
	}
	var d strings.Builder
	open := false
	point := func(i int) {
		cmd := "L"
		if !open {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, p.x(p.s.Times[i]), p.y(values[i]))
		open = true
	}
	end := func(lone bool) {
		if lone {
			d.WriteString("h0 ") // a lone point: a dot, with round caps
		}
		open = false
	}
	points := 0 // in the current run
	for start := 0; start < n; start += group {
		lo, hi := -1, -1
		for i := start; i < min(start+group, n); i++ {
			if !present[i] {
				continue
			}
			if lo < 0 || values[i] < values[lo] {
				lo = i
			}
			if hi < 0 || values[i] > values[hi] {
				hi = i
			}
		}
		if lo < 0 {
			if open {
				end(points == 1)
			}
			points = 0
			continue
		}
		first, second := min(lo, hi), max(lo, hi)
		point(first)
		points++
		if second != first {
			point(second)
			points++
		}
	}
	if open {
		end(points == 1)
	}
	return strings.TrimSpace(d.String())
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
