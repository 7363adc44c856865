package benchfmt

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Errors wrapped by *SizeError, for errors.Is.
var (
	ErrSizeSyntax = errors.New("not a number followed by an optional unit")
	ErrSizeUnit   = errors.New("unknown unit (want B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)")
	ErrSizeRange  = errors.New("out of range (0 to 2^63-1 bytes)")
)

// SizeError reports a byte size that ParseSize cannot read.
type SizeError struct {
	Input string // the text given to ParseSize
	Err   error  // ErrSizeSyntax, ErrSizeUnit or ErrSizeRange
}

// Error returns e.g. `size "12XB": unknown unit (...)`.
func (e *SizeError) Error() string {
	return fmt.Sprintf("size %q: %v", e.Input, e.Err)
}

// Unwrap returns the reason, for errors.Is.
func (e *SizeError) Unwrap() error { return e.Err }

// units maps lower-cased unit names to their size in bytes. Binary (KiB)
// and decimal (KB) units are both accepted, as users write both.
var units = map[string]float64{
	"":    1,
	"b":   1,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
}

// ParseSize reads a byte size such as "1GiB", "512 MiB", "1.5GB", "10KB" or
// "4096". Units are case-insensitive; KiB/MiB/GiB/TiB are powers of 1024 and
// KB/MB/GB/TB powers of 1000. A fractional size is rounded to the nearest
// byte. Errors are *SizeError.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	i := strings.IndexFunc(in, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(in)
	}
	num, unit := in[:i], strings.ToLower(strings.TrimSpace(in[i:]))
	if num == "" {
		return 0, &SizeError{Input: s, Err: ErrSizeSyntax}
	}
	mult, ok := units[unit]
	if !ok {
		return 0, &SizeError{Input: s, Err: ErrSizeUnit}
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, &SizeError{Input: s, Err: ErrSizeRange}
		}
		if n > math.MaxInt64/int64(mult) {
			return 0, &SizeError{Input: s, Err: ErrSizeRange}
		}
		return n * int64(mult), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, &SizeError{Input: s, Err: ErrSizeSyntax}
	}
	v := math.Round(f * mult)
	if v >= math.MaxInt64 {
		return 0, &SizeError{Input: s, Err: ErrSizeRange}
	}
	return int64(v), nil
}

// binaryUnits are the units FormatSize uses, largest first.
var binaryUnits = []struct {
	name string
	size int64
}{
	{"TiB", 1 << 40},
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
}

// FormatSize returns n in the largest binary unit that divides it exactly
// ("1GiB", "1536MiB", "4097B"), so ParseSize(FormatSize(n)) == n. Negative
// sizes are formatted as plain bytes.
func FormatSize(n int64) string {
	for _, u := range binaryUnits {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Size is a byte size usable as a flag:
//
//	size := benchfmt.Size(1 << 30)
//	flag.Var(&size, "size", "object size (e.g. 1GiB, 512MB)")
type Size int64

// String formats s with FormatSize.
func (s *Size) String() string { return FormatSize(int64(*s)) }

// Type names the flag's value in usage lines (spf13/pflag asks for it).
func (s *Size) Type() string { return "size" }

// Set parses text with ParseSize.
func (s *Size) Set(text string) error {
	n, err := ParseSize(text)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// HumanSize renders a byte count for people, with a binary unit and at
// most one decimal, none when it adds nothing: "512 B", "1.5 KiB",
// "256 MiB", "1 GiB", "23.5 GiB".
func HumanSize(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	if u == 0 || v >= 100 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
