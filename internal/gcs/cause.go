package gcs

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// An actor's entry holds its death cause (an ErrorInfo: a message of up
// to 16 KiB, a stack of up to 64 KiB, registered error values of up to
// 64 KiB each, ...; internal/errs's bounds), which can make the entry
// larger than the largest the GCS takes (Config.MaxEntryBytes). The
// entry's state must change all the same (an actor left ALIVE at a dead
// node's address is called there for ever), so the GCS shortens the
// cause until the entry fits: fitCause.

// truncatedMark ends a field of a death cause the GCS shortened (the
// message also gets it when registered values or sentinels are dropped).
const truncatedMark = "… (truncated)"

// fitCause shortens a's death cause, in place, until a's encoded entry
// takes at most maxEntry bytes (0: no bound), cutting or dropping in this
// order, and only as much as needed: the remote stack; the registered
// error values, last first (as internal/errs sends a value too large as
// its message only); the message; the sentinel names, last first; the
// task name and the error type names. A cut field ends with
// truncatedMark. If that is not enough, only the cause's code is kept,
// and if even that does not fit, no cause: an entry that still does not
// fit is too large for reasons of its own, and the write refuses it. a
// must be the caller's own (checks clone); its cause is replaced, never
// changed in place.
func fitCause(a *atollpb.ActorInfo, maxEntry int) {
	if maxEntry <= 0 || a.DeathCause == nil || proto.Size(a) <= maxEntry {
		return
	}
	c := proto.CloneOf(a.DeathCause)
	a.DeathCause = c
	over := func() int { return proto.Size(a) - maxEntry }
	marked := func() {
		if !strings.HasSuffix(c.Message, truncatedMark) {
			c.Message += truncatedMark
		}
	}
	steps := []func(){
		func() { cutText(&c.RemoteStack, over()) },
		func() { dropWhileOver(&c.Registered, over, marked) },
		func() { cutText(&c.Message, over()) },
		func() { dropWhileOver(&c.Sentinels, over, marked) },
		func() { cutText(&c.TaskName, over()) },
		func() { cutText(&c.ErrorType, over()) },
		func() { cutText(&c.UnregisteredType, over()) },
		func() { a.DeathCause = &atollpb.ErrorInfo{Code: c.Code, Message: truncatedMark} },
		func() { a.DeathCause.Message = "" },
		func() { a.DeathCause = nil },
	}
	for _, step := range steps {
		if over() <= 0 {
			return
		}
		step()
	}
}

// cutText shortens *s by at least excess bytes, at a rune boundary, and
// ends it with truncatedMark; a text too short for that becomes the mark
// alone (if that is shorter), the following steps doing the rest.
func cutText(s *string, excess int) {
	if excess <= 0 || len(*s) == 0 {
		return
	}
	keep := len(*s) - excess - len(truncatedMark)
	if keep <= 0 {
		if len(*s) > len(truncatedMark) {
			*s = truncatedMark
		}
		return
	}
	for keep > 0 && !utf8.RuneStart((*s)[keep]) {
		keep--
	}
	*s = (*s)[:keep] + truncatedMark
}

// dropWhileOver drops the last elements of s while the entry is over
// its limit (over > 0), marking the cause truncated if s had any.
func dropWhileOver[T any](s *[]T, over func() int, marked func()) {
	if len(*s) > 0 {
		marked()
	}
	for len(*s) > 0 && over() > 0 {
		*s = (*s)[:len(*s)-1]
	}
}
