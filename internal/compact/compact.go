// Package compact gives back the memory of maps that emptied out.
//
// A Go map keeps the buckets of the largest size it reached after its
// entries are deleted: the runtime never shrinks a map. A table keyed by
// task or object that once held a million entries so keeps tens of MiB
// after it empties, for the life of the process. A table that can grow
// with what a user submits keeps a Mark beside each such map and calls
// Map at a point where nothing ranges over it (the end of a step of its
// state machine); Map copies the map into one sized for what it holds once
// it holds less than an eighth of the most it held since its last copy.
// The copy costs O(entries) and happens after at least seven eighths of
// them were deleted, so it is O(1) amortized per delete.
package compact

// MinEntries is the size below which a map is never copied: the buckets
// of a map that never held more are not worth the copy.
const MinEntries = 1024

// Mark is the most entries a map held (as seen by Map) since it was last
// copied. The zero Mark is ready to use.
type Mark struct{ high int }

// Map returns m, or a copy of it in a map sized for its entries once it
// holds under an eighth of the most it held since mark was last reset.
// Call it where nothing ranges over m: the caller stores the result in
// place of m.
func Map[K comparable, V any](m map[K]V, mark *Mark) map[K]V {
	n := len(m)
	if n > mark.high {
		mark.high = n
		return m
	}
	if mark.high < MinEntries || n >= mark.high/8 {
		return m
	}
	c := make(map[K]V, n)
	for k, v := range m {
		c[k] = v
	}
	mark.high = n
	return c
}
