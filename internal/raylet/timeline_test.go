package raylet

import "testing"

// The timeline keeps the trace id of a task's W3C traceparent, and
// nothing for a malformed one.
func TestTimelineTraceID(t *testing.T) {
	for _, tc := range []struct{ traceparent, want string }{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"", ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""}, // the invalid all-zero id
		{"00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01", ""},   // too short
		{"00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01", ""}, // not hex
		{"4bf92f3577b34da6a3ce929d0e0e4736", ""},
	} {
		got := ""
		if id := traceID(tc.traceparent); id.IsValid() {
			got = id.String()
		}
		if got != tc.want {
			t.Errorf("traceID(%q) = %q, want %q", tc.traceparent, got, tc.want)
		}
	}
}
