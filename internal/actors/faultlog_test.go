package actors

import "testing"

// Snapshot pages through the log by Seq: every event once, in order;
// events the ring dropped are counted as lost; the counts by kind and
// rule cover every fault, dropped events included.
func TestFaultLogSnapshotPages(t *testing.T) {
	f := NewFaultInjector()
	f.Add(Rule{Name: "a", Kind: FaultDrop, Match: MessageNamed("actors.num"), Actor: "raylet", Count: -1})
	f.Add(Rule{Name: "b", Kind: FaultDuplicate, Count: -1})
	const n = FaultLogCap + 100
	for i := range n {
		receiver := "raylet"
		if i%2 == 1 {
			receiver = "gcs"
		}
		f.decide(num(i), receiver)
	}
	s := f.Snapshot(0, 1000)
	if s.Total != n || s.Lost != 100 || !s.More || len(s.Events) != 1000 || s.Events[0].Seq != 101 {
		t.Fatalf("first page: total %d, lost %d, more %v, %d events from %d", s.Total, s.Lost, s.More, len(s.Events), s.Events[0].Seq)
	}
	if s.ByRule["a"] != n/2 || s.ByRule["b"] != n/2 || s.Stats.Dropped != n/2 || s.Stats.Duplicated != n/2 {
		t.Fatalf("counts %v, %+v", s.ByRule, s.Stats)
	}
	after, read := uint64(0), 0
	for {
		s := f.Snapshot(after, 1000)
		for _, e := range s.Events {
			if e.Seq != after+1 && !(after == 0 && e.Seq == 101) {
				t.Fatalf("event %d after %d", e.Seq, after)
			}
			after = e.Seq
			read++
		}
		if !s.More {
			break
		}
	}
	if read != FaultLogCap || after != n {
		t.Fatalf("read %d events through %d; want %d through %d", read, after, FaultLogCap, n)
	}
	if s := f.Snapshot(n, 10); len(s.Events) != 0 || s.More || s.Lost != 0 || s.Total != n {
		t.Fatalf("nothing new: %+v", s)
	}
	f.decide(num(1), "raylet")
	if s := f.Snapshot(n, 10); len(s.Events) != 1 || s.Events[0].Seq != n+1 || s.Events[0].Rule != "a" {
		t.Fatalf("one new: %+v", s.Events)
	}
}

// The counts by rule are bounded: rules past MaxRuleCounts count under
// OtherRules.
func TestFaultLogRuleCountsBounded(t *testing.T) {
	var l faultLog
	for i := range MaxRuleCounts + 10 {
		l.add(FaultEvent{Rule: string(rune('A' + i))})
	}
	if len(l.byRule) != MaxRuleCounts+1 || l.byRule[OtherRules] != 10 {
		t.Fatalf("%d rule counts, %d other", len(l.byRule), l.byRule[OtherRules])
	}
}
