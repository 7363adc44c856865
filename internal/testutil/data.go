package testutil

// Pattern returns n bytes of a fixed pattern that repeats only every
// 512 KiB, so that a byte copied to the wrong offset shows.
func Pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>11)
	}
	return b
}

// ByteSum is the sum of b's bytes: a checksum of Pattern's bytes that
// two processes compute alike.
func ByteSum(b []byte) uint64 {
	var s uint64
	for _, x := range b {
		s += uint64(x)
	}
	return s
}
