package benchfmt

import (
	"errors"
	"flag"
	"io"
	"math"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0":        0,
		"4096":     4096,
		"12B":      12,
		"1KiB":     1 << 10,
		"1GiB":     1 << 30,
		"512 MiB":  512 << 20,
		" 2TiB ":   2 << 40,
		"1gib":     1 << 30,
		"10KB":     10_000,
		"3MB":      3_000_000,
		"1GB":      1_000_000_000,
		"1.5GiB":   3 << 29,
		"0.5KB":    500,
		"1.0000KB": 1000,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	for in, want := range map[string]error{
		"":                     ErrSizeSyntax,
		"GiB":                  ErrSizeSyntax,
		"-1GiB":                ErrSizeSyntax,
		"1.2.3MB":              ErrSizeSyntax,
		"12XB":                 ErrSizeUnit,
		"1 GiB extra":          ErrSizeUnit,
		"9223372036854775808":  ErrSizeRange,
		"8388608TiB":           ErrSizeRange,
		"9999999999999999TB":   ErrSizeRange,
		"9223372036854775807B": nil,
	} {
		_, err := ParseSize(in)
		if want == nil {
			if err != nil {
				t.Errorf("ParseSize(%q): %v", in, err)
			}
			continue
		}
		var se *SizeError
		if !errors.As(err, &se) || se.Input != in || !errors.Is(err, want) {
			t.Errorf("ParseSize(%q) error %v, want a *SizeError wrapping %v", in, err, want)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for n, want := range map[int64]string{
		0:                 "0B",
		1:                 "1B",
		4097:              "4097B",
		1 << 10:           "1KiB",
		1536 << 20:        "1536MiB",
		1 << 30:           "1GiB",
		3 << 40:           "3TiB",
		-5:                "-5B",
		math.MaxInt64:     "9223372036854775807B",
		1_000_000_000_000: "976562500KiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if n < 0 {
			continue
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	size := Size(1 << 30)
	fs.Var(&size, "size", "object size")
	if err := fs.Parse([]string{"-size", "256MiB"}); err != nil {
		t.Fatal(err)
	}
	if size != 256<<20 || size.String() != "256MiB" {
		t.Fatalf("size %d %q", size, size.String())
	}
	if err := fs.Parse([]string{"-size", "lots"}); err == nil {
		t.Fatal("bad size accepted")
	}
}
