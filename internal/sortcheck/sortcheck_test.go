package sortcheck

import (
	"slices"
	"testing"
)

func TestGenerateAndSample(t *testing.T) {
	a := Generate(GenArgs{Seed: 1, N: 1000})
	if b := Generate(GenArgs{Seed: 1, N: 1000}); len(a) != 1000 || !slices.Equal(a, b) {
		t.Fatal("the same arguments gave different chunks")
	}
	into := make([]int64, 1000)
	for i := range into {
		into[i] = -1 // a reused buffer's old values
	}
	if GenerateInto(GenArgs{Seed: 1, N: 1000}, into); !slices.Equal(a, into) {
		t.Fatal("GenerateInto made a different chunk from Generate")
	}
	if c := Generate(GenArgs{Seed: 2, N: 1000}); slices.Equal(a, c) {
		t.Fatal("two seeds gave the same chunk")
	}
	s := Sample(a, 64)
	if len(s.Samples) != 64 || s.Input != Summarize(a) {
		t.Fatalf("sample: %d values, input %+v", len(s.Samples), s.Input)
	}
	for _, x := range s.Samples {
		if !slices.Contains(a, x) {
			t.Fatalf("sampled %d, not in the chunk", x)
		}
	}
	if !slices.Equal(Sample(a, 64).Samples, s.Samples) {
		t.Fatal("sampling is not deterministic")
	}
	if e := Sample(nil, 64); len(e.Samples) != 0 || e.Input.Count != 0 {
		t.Fatalf("an empty chunk: %+v", e)
	}
}
