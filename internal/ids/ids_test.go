package ids

import "testing"

func TestObjectIDEncodesProducer(t *testing.T) {
	task := NewTaskID()
	ret := ReturnObjectID(task, 3)
	if ret.TaskID() != task || ret.Index() != 3 || ret.IsPut() {
		t.Fatalf("return id %v: task %v index %d put %v", ret, ret.TaskID(), ret.Index(), ret.IsPut())
	}
	put := PutObjectID(task, 7)
	if put.TaskID() != task || put.Index() != 7 || !put.IsPut() {
		t.Fatalf("put id %v: task %v index %d put %v", put, put.TaskID(), put.Index(), put.IsPut())
	}
	if put == ReturnObjectID(task, 7) {
		t.Fatal("put and return ids collide")
	}
}

func TestRoundTripBytes(t *testing.T) {
	o := ReturnObjectID(NewTaskID(), 1)
	back, err := ObjectIDFromBytes(o.Bytes())
	if err != nil || back != o {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if _, err := ObjectIDFromBytes([]byte{1, 2}); err == nil {
		t.Fatal("short object id accepted")
	}
	id := NewWorkerID()
	got, err := FromBytes(id.Bytes())
	if err != nil || got != id {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if _, err := FromBytes(nil); err == nil {
		t.Fatal("empty id accepted")
	}
}

// TestFromHex: an id's hex string decodes back to it without an
// allocation (a worker decodes its caller's node on every task), and a
// string of another length or with a byte that is not hex is refused.
func TestFromHex(t *testing.T) {
	id := NewWorkerID()
	s := id.String()
	got, err := FromHex(s)
	if err != nil || got != id {
		t.Fatalf("FromHex(%q) = %v, %v", s, got, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = FromHex(s) }); n != 0 {
		t.Errorf("FromHex allocates %v times", n)
	}
	for _, bad := range []string{"", s[:30], s + "00", s[:31], s[:31] + "g", "zz" + s[2:]} {
		if _, err := FromHex(bad); err == nil {
			t.Errorf("FromHex(%q) accepted", bad)
		}
	}
}
