package gcs

import (
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TestFitCauseCutsOnlyWhatItMust: fitCause leaves an entry that fits as
// it is; otherwise it cuts the stack, drops registered values, cuts the
// message, drops sentinels, cuts the other names, keeps the code alone,
// drops the cause, in that order and no further than the entry needs,
// at rune boundaries, marking what it cut; the caller's cause is never
// changed.
func TestFitCauseCutsOnlyWhatItMust(t *testing.T) {
	cause := func() *atollpb.ErrorInfo {
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: strings.Repeat("é", 500),
			TaskName: strings.Repeat("t", 200), RemoteStack: strings.Repeat("ß", 1000), ErrorType: strings.Repeat("e", 200),
			UnregisteredType: strings.Repeat("u", 200), NodeId: make([]byte, 16),
			Registered: []*atollpb.RegisteredError{{Type: "a", Gob: make([]byte, 300)}, {Type: "b", Gob: make([]byte, 300)}},
			Sentinels:  []string{strings.Repeat("s", 100), strings.Repeat("r", 100)}}
	}
	base := namedActor("", "")
	base.State = atollpb.ActorState_ACTOR_DEAD
	bare := proto.Size(base)
	full := proto.CloneOf(base)
	full.DeathCause = cause()
	size := proto.Size(full)

	for _, tc := range []struct {
		name  string
		max   int
		check func(c *atollpb.ErrorInfo) bool
	}{
		{"fits", size, func(c *atollpb.ErrorInfo) bool { return proto.Equal(c, cause()) }},
		{"the stack", size - 100, func(c *atollpb.ErrorInfo) bool {
			return strings.HasSuffix(c.RemoteStack, truncatedMark) && len(c.RemoteStack) > 1800 && c.Message == cause().Message && len(c.Registered) == 2
		}},
		{"a value", size - 2100, func(c *atollpb.ErrorInfo) bool {
			return c.RemoteStack == truncatedMark && len(c.Registered) == 1 && c.Message == cause().Message+truncatedMark && len(c.Sentinels) == 2
		}},
		{"the message", size - 2900, func(c *atollpb.ErrorInfo) bool {
			return len(c.Registered) == 0 && strings.HasSuffix(c.Message, truncatedMark) && len(c.Message) > 400 && len(c.Sentinels) == 2
		}},
		{"a sentinel", size - 3650, func(c *atollpb.ErrorInfo) bool {
			return c.Message == truncatedMark && len(c.Sentinels) == 1 && c.TaskName == cause().TaskName
		}},
		{"the names", size - 4100, func(c *atollpb.ErrorInfo) bool {
			return len(c.Sentinels) == 0 && c.TaskName == truncatedMark && strings.HasSuffix(c.ErrorType, truncatedMark) &&
				c.UnregisteredType == cause().UnregisteredType && c.NodeId != nil
		}},
		{"the code alone", bare + 21, func(c *atollpb.ErrorInfo) bool {
			return proto.Equal(c, &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: truncatedMark})
		}},
		{"the code without a mark", bare + 6, func(c *atollpb.ErrorInfo) bool {
			return proto.Equal(c, &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR})
		}},
		{"no cause", bare + 1, func(c *atollpb.ErrorInfo) bool { return c == nil }},
		{"an entry too large without it", bare - 1, func(c *atollpb.ErrorInfo) bool { return c == nil }},
	} {
		a := proto.CloneOf(full)
		given := a.DeathCause
		fitCause(a, tc.max)
		c := a.DeathCause
		if !proto.Equal(given, cause()) {
			t.Errorf("%s: the caller's cause changed", tc.name)
		}
		if !tc.check(c) {
			t.Errorf("%s: cut to %v", tc.name, c)
		}
		if tc.max >= bare && proto.Size(a) > tc.max {
			t.Errorf("%s: %d bytes, want at most %d", tc.name, proto.Size(a), tc.max)
		}
		for _, s := range []string{c.GetMessage(), c.GetRemoteStack(), c.GetTaskName(), c.GetErrorType(), c.GetUnregisteredType()} {
			if !utf8.ValidString(s) {
				t.Errorf("%s: a field cut inside a rune: %q", tc.name, s)
			}
		}
		if _, err := proto.Marshal(a); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
