package data

import (
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// SortKey is one key of a sort: a column and its direction.
type SortKey struct {
	Column     string
	Descending bool
	// err: Key was given an option that does not belong to a key
	err error
}

// Key is a sort key on column, ascending unless Descending() is given
// (the only option a key takes; Partitions belongs to SortBy).
func Key(column string, opts ...SortOption) SortKey {
	var o logicalOp
	for _, f := range opts {
		f(&o)
	}
	k := SortKey{Column: column, Descending: o.descending}
	if o.parts != 0 {
		k.err = fmt.Errorf("%w: data: Key(%q): Partitions is an option of SortBy, not of a key", atoll.ErrInvalidArgument, column)
	}
	return k
}

// SortBy sorts the rows by several keys: by the first, rows equal on it
// by the second, and so on, each key ascending or descending (nulls last
// in either direction). It runs as Sort does (a distributed sample sort
// whose samples and range bounds are rows of the key columns); opts take
// Partitions (Descending belongs to each Key).
//
//	ds.SortBy([]data.SortKey{data.Key("day"), data.Key("score", data.Descending())}, data.Partitions(8))
func (d *Dataset) SortBy(keys []SortKey, opts ...SortOption) *Dataset {
	o := &logicalOp{name: "sort", kind: kindAllToAll}
	for _, f := range opts {
		f(o)
	}
	switch {
	case len(keys) == 0:
		return d.withErr(fmt.Errorf("%w: data: SortBy needs at least one key", atoll.ErrInvalidArgument))
	case o.parts < 0:
		return d.withErr(fmt.Errorf("%w: data: SortBy: Partitions(%d)", atoll.ErrInvalidArgument, o.parts))
	case o.descending:
		return d.withErr(fmt.Errorf("%w: data: SortBy: Descending is an option of each Key", atoll.ErrInvalidArgument))
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if k.err != nil {
			return d.withErr(k.err)
		}
		if k.Column == "" || seen[k.Column] {
			return d.withErr(fmt.Errorf("%w: data: SortBy: key column %q empty or repeated", atoll.ErrInvalidArgument, k.Column))
		}
		seen[k.Column] = true
	}
	o.keys = append([]SortKey(nil), keys...)
	return d.with(o)
}
