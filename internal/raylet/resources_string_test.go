package raylet

import "testing"

// TestResourcesString: memory resources print as sizes, not floats
// (memory=2.527602688e+10 was unreadable); small or other quantities as
// plain numbers.
func TestResourcesString(t *testing.T) {
	for _, tc := range []struct {
		r    Resources
		want string
	}{
		{Resources{"CPU": 2, "memory": 25276026880}, "CPU=2 memory=23.5GiB"},
		{Resources{"memory": 1 << 30, "object_store_memory": 1536}, "memory=1GiB object_store_memory=1.5KiB"},
		{Resources{"memory": 100, "GPU": 0.5}, "GPU=0.5 memory=100"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%v: %q, want %q", map[string]float64(tc.r), got, tc.want)
		}
	}
}
