package raylet

import "testing"

// TestActorPipelineDepth: an actor's host holds twice the node's depth of
// calls in its worker; with pipelining off (1), one.
func TestActorPipelineDepth(t *testing.T) {
	for _, c := range []struct{ depth, want int }{{0, 1}, {1, 1}, {2, 4}, {DefaultPipelineDepth, 2 * DefaultPipelineDepth}} {
		if got := ActorPipelineDepth(c.depth); got != c.want {
			t.Errorf("ActorPipelineDepth(%d) = %d, want %d", c.depth, got, c.want)
		}
	}
}
