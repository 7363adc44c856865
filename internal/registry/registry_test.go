package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestKindRegistersByName: entries come back by name and in name order;
// a name taken twice, or an empty one, is refused with what the first
// entry was, and MustAdd panics with the kind and the name.
func TestKindRegistersByName(t *testing.T) {
	k := NewKind[int]("test function")
	for _, name := range []string{"b", "c", "a"} {
		if err := k.Add(name, len(name)+int(name[0])); err != nil {
			t.Fatalf("Add(%q): %v", name, err)
		}
	}
	if v, ok := k.Lookup("c"); !ok || v != 1+'c' {
		t.Errorf("Lookup(c) = %d, %v", v, ok)
	}
	if _, ok := k.Lookup("d"); ok {
		t.Error("Lookup(d) found an entry never added")
	}
	var names []string
	k.All(func(name string, _ int) bool { names = append(names, name); return true })
	if !slices.Equal(names, []string{"a", "b", "c"}) || k.Len() != 3 {
		t.Errorf("All: %v, Len %d; want [a b c], 3", names, k.Len())
	}
	err := k.Add("b", 7)
	var dup *DuplicateError
	if !errors.As(err, &dup) || dup.Existing != int(1+'b') || dup.Kind != "test function" || dup.Name != "b" {
		t.Errorf("Add of a taken name: %v (%#v)", err, dup)
	}
	if v, _ := k.Lookup("b"); v != 1+'b' {
		t.Errorf("a refused Add replaced the entry: %d", v)
	}
	if err := k.Add("", 1); err == nil {
		t.Error("Add with an empty name accepted")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `test function "a" registered twice`) {
			t.Errorf("MustAdd of a taken name: panic %v", r)
		}
	}()
	k.MustAdd("a", 0)
}

// TestAllStopsEarly: All stops when yield returns false.
func TestAllStopsEarly(t *testing.T) {
	k := NewKind[string]("test")
	k.MustAdd("x", "1")
	k.MustAdd("y", "2")
	n := 0
	k.All(func(string, string) bool { n++; return false })
	if n != 1 {
		t.Errorf("yield called %d times after returning false", n)
	}
}

// TestConcurrentAddAndRead: registrations racing with lookups and
// iterations (run with -race) leave every entry found, in order.
func TestConcurrentAddAndRead(t *testing.T) {
	k := NewKind[int]("test")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				k.MustAdd(fmt.Sprintf("%d-%03d", g, i), i)
				k.Lookup(fmt.Sprintf("%d-%03d", (g+1)%4, i))
				k.All(func(string, int) bool { return true })
			}
		})
	}
	wg.Wait()
	var names []string
	k.All(func(name string, _ int) bool { names = append(names, name); return true })
	if len(names) != 400 || !slices.IsSorted(names) {
		t.Errorf("%d names, sorted %v", len(names), slices.IsSorted(names))
	}
}

// TestMethodNames: a method's name is its type's, a dot and its own; the
// split finds them again when the type's name holds dots.
func TestMethodNames(t *testing.T) {
	name := MethodName("atoll/util.Queue", "Put")
	if name != "atoll/util.Queue.Put" {
		t.Errorf("MethodName: %q", name)
	}
	if typ, m := SplitMethod(name); typ != "atoll/util.Queue" || m != "Put" {
		t.Errorf("SplitMethod(%q) = %q, %q", name, typ, m)
	}
	if typ, m := SplitMethod("nodot"); typ != "nodot" || m != "" {
		t.Errorf("SplitMethod(nodot) = %q, %q", typ, m)
	}
}

// TestNotRegisteredSaysWhy: the message names what is missing and the
// usual cause.
func TestNotRegisteredSaysWhy(t *testing.T) {
	msg := NotRegistered(Functions.Name(), "square")
	for _, want := range []string{`remote function "square"`, "not registered in the worker binary", "package level", "atoll.Init"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
}
