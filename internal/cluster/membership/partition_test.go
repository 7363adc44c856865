package membership

import (
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/partition"
)

// TestPartitionedMemberDeclaredDead: a member cut off the network (both
// ways, or one way only) is declared dead by the others within the
// failure budget, and declares them dead in turn; members left connected
// keep each other. After the heal, the gossip views are what the cluster
// layer must cope with, logged here.
func TestPartitionedMemberDeclaredDead(t *testing.T) {
	for _, dir := range []partition.Direction{partition.Both, partition.Inbound, partition.Outbound} {
		t.Run(dir.String(), func(t *testing.T) {
			budget := 2 * time.Second
			switches := make([]*partition.Switch, 3)
			i := 0
			nodes := startCluster(t, 3, func(c *Config) {
				c.FailureBudget = budget
				switches[i] = partition.New(nil)
				c.Partition = switches[i]
				i++
			})
			cut := nodes[2]
			start := time.Now()
			if err := switches[2].Cut(dir, 30*budget); err != nil {
				t.Fatal(err)
			}
			for j, nd := range nodes[:2] {
				if l := waitLeft(t, nd.events, cut.ID(), 2*budget); !l.Dead {
					t.Errorf("node %d: the cut node reported as leaving, not dead", j)
				}
			}
			t.Logf("%s: the others declared the cut node dead after %v", dir, time.Since(start).Round(time.Millisecond))
			if dir == partition.Both {
				// The cut node declares the others dead too, later: its
				// failed probes lower its local health, which stretches its
				// probe interval (up to 8x; memberlist's awareness).
				gone := map[ids.NodeID]bool{nodes[0].ID(): true, nodes[1].ID(): true}
				deadline := time.After(12 * budget)
				for len(gone) > 0 {
					select {
					case e := <-cut.events:
						if l, ok := e.(NodeLeft); ok {
							delete(gone, l.ID)
						}
					case <-deadline:
						t.Fatalf("the cut node did not declare %d of the others dead within %v", len(gone), 12*budget)
					}
				}
			}
			if len(nodes[0].Members()) != 2 || len(nodes[1].Members()) != 2 {
				t.Errorf("the connected members see %d and %d members, want 2 each", len(nodes[0].Members()), len(nodes[1].Members()))
			}
			switches[2].Heal()
		})
	}
}

func TestPartitionSwitchRefusesBadCuts(t *testing.T) {
	s := partition.New(nil)
	for _, c := range []struct {
		dir partition.Direction
		d   time.Duration
	}{{0, time.Second}, {partition.Both, 0}, {partition.Both, partition.MaxCut + 1}, {partition.Outbound + 1, time.Second}} {
		if err := s.Cut(c.dir, c.d); err == nil {
			t.Errorf("Cut(%v, %v) accepted", c.dir, c.d)
		}
	}
	if dir, _ := s.State(); dir != 0 {
		t.Errorf("refused cuts left the switch cut (%v)", dir)
	}
}
