package expr

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The parts Part reads that are not units of Truncate.
const (
	// Weekday is the ISO day of the week: Monday 1 to Sunday 7.
	Weekday TimeUnit = "weekday"
	// YearDay is the day of the year, 1 to 366.
	YearDay TimeUnit = "yearday"
)

// partUnits are the parts Part reads, in the order errors list them.
var partUnits = []TimeUnit{Year, Quarter, Month, Week, Day, Weekday, YearDay, Hour, Minute, Second}

// isPart says whether u is a part Part reads.
func isPart(u TimeUnit) bool { return slices.Contains(partUnits, u) }

// partNames lists the parts for an error: "year, quarter, ... and second".
func partNames() string {
	names := make([]string, len(partUnits))
	for i, p := range partUnits {
		names[i] = string(p)
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// timeParts reads part of each time of arr, a timestamp or a date array,
// into an int32 array: one pass over the values, converted to seconds a
// block at a time, with a zone's offsets found once per batch (one entry
// per change of offset between its first and its last time).
func timeParts(mem memory.Allocator, arr arrow.Array, part TimeUnit) (arrow.Array, error) {
	n := arr.Len()
	var (
		block [partBlock]int64
		zone  zoneOffsets
		fill  func(from int, secs []int64) // a block of values, in seconds
	)
	switch a := arr.(type) {
	case *array.Timestamp:
		typ := a.DataType().(*arrow.TimestampType)
		loc, err := typ.GetZone()
		if err != nil {
			return nil, fmt.Errorf("expr: %s: %w", typ, err)
		}
		fill = timestampSeconds(a.Values(), typ.Unit)
		if lo, hi, ok := timeRange(arr, a.Values()); ok && loc != time.UTC {
			// seconds grow with the values: the range's ends are theirs
			ends := []int64{int64(lo), int64(hi)}
			timestampSeconds([]arrow.Timestamp{lo, hi}, typ.Unit)(0, ends)
			zone = zoneOffsetsOf(loc, ends[0], ends[1])
		}
	case *array.Date32:
		vals := a.Date32Values()
		fill = func(from int, secs []int64) {
			for i := range secs {
				secs[i] = int64(vals[from+i]) * 86400
			}
		}
	case *array.Date64:
		vals := a.Date64Values()
		fill = func(from int, secs []int64) {
			for i := range secs {
				secs[i] = floorDiv(int64(vals[from+i]), 1000)
			}
		}
	default:
		return nil, fmt.Errorf("expr: the parts of a %s", arr.DataType())
	}
	values, out := fixedBuffer[int32](mem, n)
	for from := 0; from < n; from += partBlock {
		secs := block[:min(partBlock, n-from)]
		fill(from, secs)
		zone.apply(secs)
		for i, sec := range secs {
			out[from+i] = partOf(sec, part)
		}
	}
	return finish(arrow.PrimitiveTypes.Int32, n, validityOf(mem, arr), values), nil
}

// timestampSeconds converts blocks of vals, in unit, to seconds: one loop
// per unit, so that each divides by a constant (a multiplication).
func timestampSeconds(vals []arrow.Timestamp, unit arrow.TimeUnit) func(int, []int64) {
	switch unit {
	case arrow.Millisecond:
		return func(from int, secs []int64) {
			for i := range secs {
				secs[i] = floorDiv(int64(vals[from+i]), 1e3)
			}
		}
	case arrow.Microsecond:
		return func(from int, secs []int64) {
			for i := range secs {
				secs[i] = floorDiv(int64(vals[from+i]), 1e6)
			}
		}
	case arrow.Nanosecond:
		return func(from int, secs []int64) {
			for i := range secs {
				secs[i] = floorDiv(int64(vals[from+i]), 1e9)
			}
		}
	}
	return func(from int, secs []int64) {
		for i := range secs {
			secs[i] = int64(vals[from+i])
		}
	}
}

// partBlock is how many values timeParts converts at a time.
const partBlock = 512

// timeRange is the least and the greatest of arr's valid values; false
// when none is valid.
func timeRange(arr arrow.Array, vals []arrow.Timestamp) (lo, hi arrow.Timestamp, ok bool) {
	if arr.NullN() == 0 && len(vals) > 0 {
		lo, hi = vals[0], vals[0]
		for _, v := range vals[1:] {
			lo, hi = min(lo, v), max(hi, v)
		}
		return lo, hi, true
	}
	for i, v := range vals {
		if arr.IsValid(i) {
			if !ok {
				lo, hi, ok = v, v, true
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return lo, hi, ok
}

// partOf is part of the wall time sec seconds after 1970-01-01 00:00.
func partOf(sec int64, part TimeUnit) int32 {
	days := floorDiv(sec, 86400)
	switch part {
	case Hour:
		return int32(sec-days*86400) / 3600
	case Minute:
		return int32(sec-days*86400) % 3600 / 60
	case Second:
		return int32(sec-days*86400) % 60
	case Weekday:
		return int32(floorMod(days+3, 7)) + 1 // 1970-01-01 was a Thursday
	}
	y, m, d := civil(days)
	switch part {
	case Year:
		return int32(y)
	case Quarter:
		return int32(m-1)/3 + 1
	case Month:
		return int32(m)
	case Day:
		return int32(d)
	case YearDay:
		return int32(days-daysFromCivil(y, 1, 1)) + 1
	}
	// Week: the ISO week of the year, counted in the year of its Thursday.
	thursday := days - floorMod(days+3, 7) + 3
	ty, _, _ := civil(thursday)
	return int32((thursday-daysFromCivil(ty, 1, 1))/7) + 1
}

// civil is the proleptic Gregorian date days after 1970-01-01 (Howard
// Hinnant's algorithm: eras of 400 years, years from March).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is civil's inverse.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a-q*b < 0 {
		q--
	}
	return q
}

// floorMod is a mod b in [0, b) (b > 0).
func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// zoneOffsets are a zone's offsets from UTC over a span of time: from
// starts[i] (seconds since the epoch) until starts[i+1], offs[i], up to
// until; a time from until on is looked up on its own in loc. None: UTC.
// first indexes the spans by time: first[b] is the span that holds second
// base + b<<shift.
type zoneOffsets struct {
	starts, offs []int64
	base         int64
	shift        uint
	first        []int32
	loc          *time.Location
	until        int64
}

// Bounds on what a batch walks and indexes of a zone: the steps from one
// span to the next (two changes a year over the ±292 years of a
// nanosecond timestamp are ~1,200; a span may also end at a year's end)
// and the index's entries. Times past the steps' reach (a column of
// seconds spanning millennia) are looked up one by one.
const (
	maxZoneSteps   = 1 << 14
	maxZoneBuckets = 1 << 14
)

// zoneOffsetsOf are loc's offsets from lo to hi (seconds since the
// epoch), walked from one change of offset to the next.
func zoneOffsetsOf(loc *time.Location, lo, hi int64) zoneOffsets {
	z := zoneOffsets{base: lo, shift: 16, loc: loc, until: math.MaxInt64}
	for at, steps := lo, 0; ; steps++ {
		if steps == maxZoneSteps {
			z.until, hi = at, at
			break
		}
		t := time.Unix(at, 0).In(loc)
		_, off := t.Zone()
		if n := len(z.offs); n == 0 || z.offs[n-1] != int64(off) {
			z.starts, z.offs = append(z.starts, at), append(z.offs, int64(off))
		}
		_, end := t.ZoneBounds()
		if end.IsZero() {
			break
		}
		next := end.Unix()
		if next <= at {
			// Past a zone's listed changes Go computes its spans from its
			// rule, and on a leap year's last day the span it gives can end
			// before at: look a day ahead, and find a change within the
			// day by bisection.
			next = at + 86400
			if offsetAt(loc, next) != off {
				l, h := at, next
				for h-l > 1 {
					if m := l + (h-l)/2; offsetAt(loc, m) == off {
						l = m
					} else {
						h = m
					}
				}
				next = h
			}
		}
		if next > hi {
			break
		}
		at = next
	}
	for (hi-lo)>>z.shift >= maxZoneBuckets {
		z.shift++
	}
	z.first = make([]int32, (hi-lo)>>z.shift+1)
	j := 0
	for b := range z.first {
		for at := lo + int64(b)<<z.shift; j+1 < len(z.starts) && z.starts[j+1] <= at; {
			j++
		}
		z.first[b] = int32(j)
	}
	return z
}

// offsetAt is loc's offset at sec seconds after the epoch.
func offsetAt(loc *time.Location, sec int64) int {
	_, off := time.Unix(sec, 0).In(loc).Zone()
	return off
}

// apply turns each UTC second of secs into the zone's wall-clock second.
func (z *zoneOffsets) apply(secs []int64) {
	switch {
	case len(z.starts) == 0:
		return
	case len(z.starts) == 1 && z.until == math.MaxInt64:
		for i := range secs {
			secs[i] += z.offs[0]
		}
		return
	}
	last := int64(len(z.first) - 1)
	for i, sec := range secs {
		if sec >= z.until {
			secs[i] = sec + int64(offsetAt(z.loc, sec))
			continue
		}
		// a null's value may lie outside the batch's range: any offset
		b := min(max((sec-z.base)>>z.shift, 0), last)
		j := int(z.first[b])
		for j+1 < len(z.starts) && z.starts[j+1] <= sec {
			j++
		}
		secs[i] = sec + z.offs[j]
	}
}
