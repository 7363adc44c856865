package objectstore

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ArenaOptions are the optional knobs of NewArena.
type ArenaOptions struct {
	// Prefault populates every page of the mapping at creation
	// (MADV_POPULATE_WRITE, or touching one byte per page on kernels without
	// it), so that first writes into fresh objects take no page faults. Off
	// by default: the default arena is 30% of RAM and populating it would
	// commit all of that memory at start.
	Prefault bool
	// HugePages says whether the arena is backed by 2 MiB pages (see
	// HugePages): by default where the system allows them.
	HugePages HugePages
	// Private backs the arena with this process's own anonymous memory
	// instead of a memfd, for a node whose workers all run in its process:
	// no other process can map it (File returns nil), and it reads as fast
	// as a Go slice, on huge pages where the system gives them to ordinary
	// memory (transparent_hugepage/enabled, not shmem_enabled).
	Private bool
}

// Arena is one shared-memory region: a memfd of a fixed size mapped
// MAP_SHARED read-write. Every process of a node maps the same memfd, so
// bytes written through one mapping are visible through all the others.
// A private arena (ArenaOptions.Private) is anonymous memory of this
// process alone, for nodes with no worker processes.
//
// Views returned by Bytes alias the mapping; they are invalid after Close.
// Arena is safe for concurrent use; the store actor decides which ranges
// belong to whom.
type Arena struct {
	file *os.File // nil for a private arena
	mem  []byte
	size uint64
	// huge: the mapping asked for huge pages and the system gives them
	// to shared memory; Reserve then populates instead of fallocating.
	huge bool
	// backed has one bit per chunk of the arena known to be fully backed
	// by memory (reserved and not released since), so that reserving again
	// costs no system call.
	backed []atomic.Uint64
	// mapped has one bit per chunk this process has populated through
	// its mapping (PrefaultView, or the whole arena at creation) and not
	// released since: its pages are in this process's page tables.
	mapped []atomic.Uint64
	// populates counts PrefaultView's system calls (for tests).
	populates atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// NewArena creates an anonymous memfd called name, sizes it to size bytes and
// maps it. The file is created with MFD_CLOEXEC; to hand it to a child
// process, pass File() through exec.Cmd.ExtraFiles (which dups it without
// the flag).
func NewArena(name string, size uint64, opts ArenaOptions) (*Arena, error) {
	if size == 0 {
		return nil, errors.New("objectstore: arena size must be positive")
	}
	huge, err := hugePagesFor(opts.HugePages, opts.Private)
	if err != nil {
		return nil, err
	}
	var f *os.File // none for a private arena
	if !opts.Private {
		fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("objectstore: memfd_create %q: %w", name, err)
		}
		f = os.NewFile(uintptr(fd), name)
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("objectstore: ftruncate arena to %d bytes: %w", size, err)
		}
	}
	a, err := mapArena(f, size, opts.HugePages != HugePagesOff)
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		return nil, err
	}
	a.huge = huge
	if opts.Prefault {
		a.prefault()
		a.setBacked(chunks(0, size))
		setBits(a.mapped, 0, (size-1)/chunkSize)
	}
	return a, nil
}

// OpenArena maps an existing arena file of the given size, typically a memfd
// inherited from the raylet. The Arena takes ownership of f: Close closes it.
func OpenArena(f *os.File, size uint64) (*Arena, error) {
	if f == nil {
		return nil, errors.New("objectstore: OpenArena: nil file")
	}
	if size == 0 {
		return nil, errors.New("objectstore: arena size must be positive")
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("objectstore: stat arena file: %w", err)
	}
	if fi.Size() < 0 || uint64(fi.Size()) < size {
		return nil, fmt.Errorf("objectstore: arena file has %d bytes, want at least %d", fi.Size(), size)
	}
	return mapArena(f, size, true)
}

// mapArena maps f shared, or with f nil size bytes of this process's
// anonymous memory (MAP_NORESERVE: as with a memfd, memory is committed as
// Reserve backs it, not all at once). huge asks the kernel for huge pages
// where the system allows them (elsewhere the request is a no-op), !huge
// keeps the mapping on 4 KiB pages.
func mapArena(f *os.File, size uint64, huge bool) (*Arena, error) {
	if size > uint64(maxInt) {
		return nil, fmt.Errorf("objectstore: arena size %d too large", size)
	}
	fd, flags := -1, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE
	if f != nil {
		fd, flags = int(f.Fd()), unix.MAP_SHARED
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("objectstore: mmap arena of %d bytes: %w", size, err)
	}
	// Huge pages make scans of large objects faster (fewer TLB misses).
	// For shared memory the kernel grants them only where the
	// administrator allows it (shmem_enabled=advise or always), for
	// anonymous memory where enabled says so; elsewhere this is a no-op,
	// so its error is ignored.
	if huge {
		_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	} else {
		_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
	}
	chunks := (size + chunkSize - 1) / chunkSize
	return &Arena{file: f, mem: mem, size: size, backed: make([]atomic.Uint64, (chunks+63)/64),
		mapped: make([]atomic.Uint64, (chunks+63)/64)}, nil
}

// chunkSize is the granularity at which the arena remembers which memory is
// backed. Reserve backs whole chunks, so an arena whose objects come and go
// makes one fallocate per chunk instead of one per object.
const chunkSize = 1 << 20

// chunks returns the chunks overlapping [off, off+length).
func chunks(off, length uint64) (first, last uint64) {
	return off / chunkSize, (off + length - 1) / chunkSize
}

func (a *Arena) allBacked(first, last uint64) bool {
	for c := first; c <= last; c++ {
		if a.backed[c/64].Load()&(1<<(c%64)) == 0 {
			return false
		}
	}
	return true
}

func (a *Arena) setBacked(first, last uint64) { setBits(a.backed, first, last) }

func (a *Arena) clearBacked(first, last uint64) {
	clearBits(a.backed, first, last)
	clearBits(a.mapped, first, last) // released pages leave every page table
}

func setBits(bits []atomic.Uint64, first, last uint64) {
	for c := first; c <= last; c++ {
		bits[c/64].Or(1 << (c % 64))
	}
}

func clearBits(bits []atomic.Uint64, first, last uint64) {
	for c := first; c <= last; c++ {
		bits[c/64].And(^uint64(1 << (c % 64)))
	}
}

func bitSet(bits []atomic.Uint64, c uint64) bool { return bits[c/64].Load()&(1<<(c%64)) != 0 }

// PrefaultView maps the pages under b, a view of this arena, into this
// process's page tables before they are written
// (MADV_POPULATE_WRITE), so that the writes take no page faults: a pull
// of 256 MiB into pages not mapped yet faults 65,536 times otherwise. It
// populates whole chunks, and skips the chunks it populated before and
// that were not released since: populating pages already mapped walks
// their page tables all the same, 12–24 ms for 256 MiB on a 2-vCPU VM,
// about a tenth of the pull. A b not of this arena is left alone. The
// pages are the store's to back (Reserve): populating fails on memory
// the system cannot give, and the writes then fault as they would have.
func (a *Arena) PrefaultView(b []byte) error {
	if len(b) == 0 || len(a.mem) == 0 {
		return nil
	}
	base, at := uintptr(unsafe.Pointer(&a.mem[0])), uintptr(unsafe.Pointer(&b[0]))
	if at < base || at-base > uintptr(a.size) || uint64(len(b)) > a.size-uint64(at-base) {
		return nil
	}
	first, last := chunks(uint64(at-base), uint64(len(b)))
	for c := first; c <= last; {
		if bitSet(a.mapped, c) {
			c++
			continue
		}
		end := c // a run of chunks not mapped yet
		for end < last && !bitSet(a.mapped, end+1) {
			end++
		}
		a.populates.Add(1)
		if err := unix.Madvise(a.mem[c*chunkSize:min((end+1)*chunkSize, a.size)], unix.MADV_POPULATE_WRITE); err != nil {
			return fmt.Errorf("objectstore: populate %d chunks at %d: %w", end-c+1, c*chunkSize, err)
		}
		setBits(a.mapped, c, end)
		c = end + 1
	}
	return nil
}

const maxInt = int(^uint(0) >> 1)

// prefault populates the whole mapping. Errors are not fatal: pages that are
// not populated now are faulted in on first write.
func (a *Arena) prefault() {
	if err := unix.Madvise(a.mem, unix.MADV_POPULATE_WRITE); err == nil {
		return
	}
	page := os.Getpagesize()
	for i := 0; i < len(a.mem); i += page {
		// The arena is fresh (all zeros), so writing a zero only faults the
		// page in.
		a.mem[i] = 0
	}
}

// File returns the memfd backing the arena, to pass to other processes,
// or nil for a private arena.
func (a *Arena) File() *os.File { return a.file }

// Private reports whether the arena is this process's own memory
// (ArenaOptions.Private), which no other process can map.
func (a *Arena) Private() bool { return a.file == nil }

// Size returns the size of the arena in bytes.
func (a *Arena) Size() uint64 { return a.size }

// Bytes returns a view of [off, off+length) of the mapping without copying.
// The view's capacity is capped at length, so appending to it never writes
// into a neighbouring object. It panics if the range is outside the arena,
// which only a caller bug can cause (locations come from the store).
func (a *Arena) Bytes(off, length uint64) []byte {
	if off > a.size || length > a.size-off {
		panic(fmt.Sprintf("objectstore: range [%d, %d+%d) outside arena of %d bytes", off, off, length, a.size))
	}
	return a.mem[off : off+length : off+length]
}

// Reserve allocates backing memory for [off, off+length) with fallocate, so
// that later writes into the range can never raise SIGBUS. It returns the
// kernel's error (ENOSPC, ENOMEM) when the memory is not available.
//
// Reserve backs the whole 1 MiB chunks around the range and remembers them,
// so reserving memory that is already backed is free. Reserve and Release
// of overlapping ranges must not run concurrently (the store actor makes
// every call).
func (a *Arena) Reserve(off, length uint64) error {
	if err := a.checkRange(off, length); err != nil || length == 0 {
		return err
	}
	first, last := chunks(off, length)
	if a.allBacked(first, last) {
		return nil
	}
	start, end := first*chunkSize, min((last+1)*chunkSize, a.size)
	if a.Private() {
		// Anonymous memory cannot raise SIGBUS; populating it makes the
		// first writes as fast as a backed memfd's, and fails (ENOMEM)
		// when the memory is not there. Kernels before 5.14 cannot
		// populate: the pages are then faulted in as they are written.
		err := a.populate(start, end)
		if err != nil && err != unix.EINVAL {
			return fmt.Errorf("objectstore: reserve %d bytes at %d: %w", length, off, err)
		}
		a.setBacked(first, last)
		if err == nil {
			setBits(a.mapped, first, last) // populated through this mapping
		}
		return nil
	}
	if a.huge && a.populate(start, end) == nil {
		a.setBacked(first, last)
		setBits(a.mapped, first, last)
		return nil
	}
	if err := fallocate(a.file, 0, start, end-start); err == nil {
		a.setBacked(first, last)
		return nil
	}
	// Whole chunks may not be available when the exact range is.
	if err := fallocate(a.file, 0, off, length); err != nil {
		return fmt.Errorf("objectstore: reserve %d bytes at %d: %w", length, off, err)
	}
	return nil
}

// populate backs [start, end) by faulting it in through this mapping
// (MADV_POPULATE_WRITE): unlike fallocate, which allocates 4 KiB pages
// whatever the policy (it has no mapping to ask for huge ones), a fault in
// a mapping that asked for huge pages gets them. It fails on kernels
// before 5.14 and when memory is short (an error, not a SIGBUS); Reserve
// then falls back to fallocate.
func (a *Arena) populate(start, end uint64) error {
	return unix.Madvise(a.mem[start:end], unix.MADV_POPULATE_WRITE)
}

// HugePages reports whether the arena's memory is backed by huge pages
// (its options asked for them, or left them on auto, and the system
// allows them for shared memory).
func (a *Arena) HugePages() bool { return a.huge }

// Release returns the memory behind [off, off+length) to the kernel by
// punching a hole; the range reads as zeros afterwards and is faulted in
// again on the next write (or Reserve). The store only does this when
// Config.ReleaseFreedMemory is set.
func (a *Arena) Release(off, length uint64) error {
	if err := a.checkRange(off, length); err != nil || length == 0 {
		return err
	}
	first, last := chunks(off, length)
	a.clearBacked(first, last)
	if a.Private() {
		// Only whole pages can be dropped; the partial pages at the ends
		// stay (a private arena's ranges are page-aligned by the store).
		lo, hi := pageAlign(off, length)
		if lo < hi {
			if err := unix.Madvise(a.mem[lo:hi], unix.MADV_DONTNEED); err != nil {
				return fmt.Errorf("objectstore: release %d bytes at %d: %w", length, off, err)
			}
		}
		return nil
	}
	if err := fallocate(a.file, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length); err != nil {
		return fmt.Errorf("objectstore: release %d bytes at %d: %w", length, off, err)
	}
	return nil
}

func (a *Arena) checkRange(off, length uint64) error {
	if off > a.size || length > a.size-off {
		return fmt.Errorf("objectstore: range [%d, %d+%d) outside arena of %d bytes", off, off, length, a.size)
	}
	return nil
}

// pageAlign returns the whole pages inside [off, off+length).
func pageAlign(off, length uint64) (lo, hi uint64) {
	page := uint64(os.Getpagesize())
	lo = (off + page - 1) / page * page
	hi = (off + length) / page * page
	return lo, max(lo, hi)
}

func fallocate(f *os.File, mode uint32, off, length uint64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), mode, int64(off), int64(length))
		if err != unix.EINTR {
			return err
		}
	}
}

// Close unmaps the arena and closes its file. Views obtained from Bytes
// must not be used afterwards. Close is idempotent.
func (a *Arena) Close() error {
	a.closeOnce.Do(func() {
		err := unix.Munmap(a.mem)
		a.mem = nil
		if a.file != nil {
			if cerr := a.file.Close(); err == nil {
				err = cerr
			}
		}
		a.closeErr = err
	})
	return a.closeErr
}
