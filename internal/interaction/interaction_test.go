package interaction

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestInteraction runs the scripted stories of testdata/*.txt (go test
// ./internal/interaction -rewrite regenerates the expectations). After
// every command the environment checks its invariants across parties;
// a broken one fails the test.
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := New()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			c := Cmd{Name: d.Cmd, Input: d.Input}
			for _, a := range d.CmdArgs {
				c.Args = append(c.Args, Arg{Key: a.Key, Vals: a.Vals})
			}
			out, err := e.Run(c)
			if err != nil {
				t.Fatalf("%s: %s\n%s", d.Pos, out, err)
			}
			return out
		})
	})
}
