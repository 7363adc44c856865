package sim

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

// kvTestOp and kvTestModel: a map of keys, as the kv workload's.
type kvTestOp struct {
	put   bool
	key   string
	value int
}

func kvTestModel(partitioned bool) Model {
	m := Model{
		Init: func() any { return map[string]int{} },
		Apply: func(state, input any) (any, any) {
			s, op := state.(map[string]int), input.(kvTestOp)
			if !op.put {
				return s, s[op.key]
			}
			next := maps.Clone(s)
			next[op.key] = op.value
			return next, op.value
		},
	}
	if partitioned {
		m.Key = func(input any) string { return input.(kvTestOp).key }
	}
	return m
}

// testHistory builds a history from lines "client put|get key value call
// return" (times in ms; return "?" for an operation of unknown outcome).
func testHistory(t *testing.T, lines ...string) *History {
	t.Helper()
	h := &History{}
	for _, l := range lines {
		var client, value, call int
		var kind, key, ret string
		if _, err := fmt.Sscan(l, &client, &kind, &key, &value, &call, &ret); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		op := &Op{h: h, client: client, input: kvTestOp{put: kind == "put", key: key, value: value}, output: value,
			call: Epoch.Add(time.Duration(call) * time.Millisecond), done: true}
		if ret == "?" {
			op.unknown = true
		} else {
			var r int
			if _, err := fmt.Sscan(ret, &r); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			op.ret = Epoch.Add(time.Duration(r) * time.Millisecond)
		}
		h.ops = append(h.ops, op)
	}
	return h
}

// TestLinearizableChecker: the checker accepts histories a map allows
// and refuses a stale read, with each key's history checked on its own
// (Model.Key) and without.
func TestLinearizableChecker(t *testing.T) {
	cases := []struct {
		name  string
		ops   []string
		valid bool
	}{
		{"sequential", []string{"1 put a 1 0 1", "2 get a 1 2 3", "1 put b 5 0 4", "2 get b 5 5 6"}, true},
		{"concurrent put and get", []string{"1 put a 1 0 10", "2 get a 0 2 3", "3 get a 1 4 5"}, true},
		{"stale read", []string{"1 put a 1 0 1", "2 get a 0 2 3"}, false},
		{"a read goes back", []string{"1 put a 1 0 1", "1 put a 2 2 3", "2 get a 2 4 5", "3 get a 1 6 7"}, false},
		{"unknown put seen later", []string{"1 put a 2 0 ?", "2 get a 2 5 6"}, true},
		{"unknown put never seen", []string{"1 put a 2 0 ?", "2 get a 0 5 6", "1 put b 1 7 8", "2 get b 1 9 10"}, true},
		{"keys apart, one stale", []string{"1 put a 1 0 1", "1 put b 1 0 1", "2 get b 1 2 3", "2 get a 0 2 3"}, false},
	}
	for _, c := range cases {
		for _, partitioned := range []bool{false, true} {
			err := testHistory(t, c.ops...).linearizable(kvTestModel(partitioned))
			if (err == nil) != c.valid {
				t.Errorf("%s (partitioned %v): %v, want valid %v", c.name, partitioned, err, c.valid)
			}
			if err != nil && !strings.Contains(err.Error(), "not linearizable") {
				t.Errorf("%s (partitioned %v): %v, want a verdict", c.name, partitioned, err)
			}
		}
	}
}
