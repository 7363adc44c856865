package runtime

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Decoding values that hold refs and actor handles.
//
// A ref or an actor handle decoded from bytes (their GobDecode) registers
// itself with a runtime: it takes a reference in that runtime's owner
// table, or makes a handle there. encoding/gob gives GobDecode no
// context, so the runtime that decodes a value names itself with a
// decode scope: DecodeIn(rt, codec, data, decode) runs decode with rt as the
// process's scope, and GobDecode registers with the scope's runtime
// (decodeRuntime), else with the process's current one.
//
// A simulated process (sim.go) always decodes under its scope: the
// simulator runs many runtimes in one process.
//
// Most processes have one runtime (a worker process; a driver with
// worker processes): the scope is then that runtime whatever DecodeIn is
// given, and costs nothing. With in-process workers the driver's process
// has several (the driver's and one per worker, see inprocess.go):
// DecodeIn then holds a process-wide lock while it decodes a value that
// may hold a ref or a handle (a gob or protobuf value whose bytes hold
// refMarker or ActorHandleMarker; a raw numeric or byte slice never does
// and is not scanned), so such decodings are serialised across the
// process's runtimes; values without either decode without it, in
// parallel. The SDK decodes under the right scope everywhere it decodes
// (task and method arguments, Get, a generator's items); a value that
// holds refs or handles and is decoded elsewhere (your own gob.Decode, a
// library decoding a Raw value) binds them to the process's current
// runtime — the driver, in a process with in-process workers.
var scope struct {
	// shared counts the in-process workers' runtimes alive in this
	// process: while it is 0 no scope is needed.
	shared atomic.Int32
	// mu is held while rt is set (a leaf: decode runs under it and takes
	// only the owner table's lock).
	mu sync.Mutex
	rt atomic.Pointer[Runtime]
}

// ActorHandleMarker prefixes an encoded actor handle (the SDK's
// ActorHandle.GobEncode), as refMarker prefixes an encoded ref, so that a
// value that may hold one is found by its bytes.
var ActorHandleMarker = []byte("\x00atoll-actorhandle\x00")

// DecodeIn runs decode, which decodes data (encoded with c), with rt as
// the decode scope: the refs and actor handles the value holds register
// with rt. A raw numeric or byte encoding holds none and is not scanned
// for them (a 1 GiB []float64 argument would be, on every task).
func DecodeIn(rt *Runtime, c atollpb.Codec, data []byte, decode func() error) error {
	if rt == nil || (scope.shared.Load() == 0 && rt.sim == nil) || codec.ElemSize(c) != 0 || !mayHoldHandles(data) {
		return decode()
	}
	scope.mu.Lock()
	defer scope.mu.Unlock()
	scope.rt.Store(rt)
	defer scope.rt.Store(nil)
	return decode()
}

// mayHoldHandles reports whether an encoded value may hold a ref or an
// actor handle.
func mayHoldHandles(data []byte) bool {
	return bytes.Contains(data, refMarker) || bytes.Contains(data, ActorHandleMarker)
}

// decodeRuntime is the runtime a ref or a handle being decoded registers
// with: the decode scope's, else the process's current one.
func decodeRuntime() *Runtime {
	if rt := scope.rt.Load(); rt != nil {
		return rt
	}
	return process.cur.Load()
}

// DecodingRuntime is the runtime an actor handle being decoded registers
// with (see decodeRuntime), or why there is none.
func DecodingRuntime() (*Runtime, error) {
	rt := decodeRuntime()
	if rt == nil {
		return nil, notRunning()
	}
	if rt.closed.Load() {
		return nil, errs.ErrShutDown
	}
	return rt, nil
}
