package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// The CLI's one output style, shared by every command:
//
//   - --json prints one JSON document (an object) per command, keys in
//     snake_case, ids as hex, sizes as byte counts in *_bytes keys, times
//     as RFC 3339 strings (writeJSON);
//   - tables have an upper-case header, two spaces between columns, text
//     left-aligned and numbers and sizes right-aligned (table); rows come
//     in the order the command sorts them (nodes: head, workers, drivers,
//     then by id; jobs and actors by start time, then id);
//   - sizes are human-readable with a binary unit (humanBytes);
//   - a missing or extra argument prints the command's usage (args);
//   - errors print once, as "atoll: " and the error chain without
//     repeated or internal package prefixes (errorText).

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonTime renders a Unix time in milliseconds as RFC 3339 ("" for none).
func jsonTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// table is a text table: a header and rows of cells.
type table struct {
	header []string
	right  []bool // right-aligned columns (numbers, sizes)
	rows   [][]string
}

// newTable starts a table; a header ending in ">" names a right-aligned
// column (the ">" is not printed).
func newTable(header ...string) *table {
	t := &table{}
	for _, h := range header {
		r := strings.HasSuffix(h, ">")
		t.header = append(t.header, strings.TrimSuffix(h, ">"))
		t.right = append(t.right, r)
	}
	return t
}

// add appends a row; empty cells print as "-".
func (t *table) add(cells ...string) {
	row := make([]string, len(t.header))
	for i := range row {
		row[i] = "-"
		if i < len(cells) && cells[i] != "" {
			row[i] = cells[i]
		}
	}
	t.rows = append(t.rows, row)
}

// write prints the table; columns are two spaces apart and the last one
// carries no trailing padding.
func (t *table) write(w io.Writer) error {
	widths := make([]int, len(t.header))
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, row := range append([][]string{t.header}, t.rows...) {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if t.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// args is a command's positional-argument check: exactly n arguments,
// names saying what each is; a wrong count is an ErrInvalidArgument that
// says what is missing or extra, and main prints the usage after it.
func args(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) == n {
			return nil
		}
		return usageError(cmd, a, n, names)
	}
}

// atLeast accepts n or more arguments.
func atLeast(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) >= n {
			return nil
		}
		return usageError(cmd, a, n, names)
	}
}

// usageError says which argument is missing (or that there are too
// many) and carries the command's usage.
func usageError(cmd *cobra.Command, a []string, n int, names []string) error {
	var what string
	switch {
	case len(a) < n && len(a) < len(names):
		what = "missing " + names[len(a)]
	case len(a) < n:
		what = fmt.Sprintf("want %d arguments, got %d", n, len(a))
	default:
		what = fmt.Sprintf("unexpected argument %q", a[n])
	}
	return &usageErr{err: errs.Invalidf("%s: %s", commandName(cmd), what), usage: strings.TrimRight(cmd.UsageString(), "\n")}
}

// commandName is a command's path without the program's name ("job
// submit"), as error messages name it.
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// usageErr is an argument error that prints the command's usage after it.
type usageErr struct {
	err   error
	usage string
}

func (u *usageErr) Error() string { return u.err.Error() }
func (u *usageErr) Unwrap() error { return u.err }

// internalPrefixes are the package names some messages start with; the
// user sees none of them.
var internalPrefixes = map[string]bool{
	"atoll": true, "gcs": true, "cluster": true, "remote": true, "raylet": true, "node": true, "objectstore": true,
	"workerproc": true, "owner": true, "memsample": true, "membership": true, "natsembed": true,
}

// errorText is how the CLI prints an error: its chain joined by ": ",
// without internal package prefixes ("atoll: gcs: no live actor ..." is
// "no live actor ...") and without a part repeated right after itself.
func errorText(err error) string {
	var out []string
	for line := range strings.SplitSeq(err.Error(), "\n") {
		var parts []string
		for p := range strings.SplitSeq(line, ": ") {
			if internalPrefixes[strings.TrimSpace(p)] {
				continue
			}
			if len(parts) > 0 && parts[len(parts)-1] == p {
				continue
			}
			parts = append(parts, p)
		}
		out = append(out, strings.Join(parts, ": "))
	}
	return strings.Join(out, "\n")
}

// humanBytes formats a byte count like benchfmt.HumanSize but with no
// space, so a table column stays one word: 512B, 1.5KiB, 256MiB, 1GiB.
func humanBytes(n uint64) string { return strings.ReplaceAll(benchfmt.HumanSize(n), " ", "") }
