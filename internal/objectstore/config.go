package objectstore

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// Defaults of Config.
const (
	// DefaultCapacityFraction of physical RAM is the default arena size, as
	// Ray sizes its object store.
	DefaultCapacityFraction = 0.30
	// DefaultCreateTimeout is how long a creation waits for space by
	// default: long enough for other tasks to release and delete objects,
	// short enough that a store that stays full surfaces as an error.
	DefaultCreateTimeout = 10 * time.Second
	// releaseThreshold is the smallest freed block whose memory is returned
	// to the kernel when Config.ReleaseFreedMemory is set: below it, the
	// fallocate calls cost more than the memory is worth.
	releaseThreshold = 1 << 20
)

// Config configures the store actor. The zero value is usable: every field
// has a documented default.
type Config struct {
	// Capacity is the number of bytes objects may occupy (rounded down to a
	// multiple of Alignment); the limit is hard. Default: the arena's size
	// in NewProps; 30% of physical RAM in Config.NewArena.
	Capacity uint64

	// CreateTimeout is how long a creation that does not fit waits for
	// space before failing with ObjectStoreFull, when the request does not
	// say (timeout_ms == 0). Default: DefaultCreateTimeout.
	CreateTimeout time.Duration

	// ReleaseFreedMemory returns the memory of freed blocks of 1 MiB or
	// more to the kernel (punching holes in the memfd). Default false:
	// objects are created and freed at a high rate, and writing into pages
	// that are already backed is several times faster than backing and
	// faulting in fresh zeroed ones (about 5x for 64 MiB objects, see
	// BenchmarkWrite64MiB), so by default the store keeps what it has
	// touched, up to Capacity. Set it on nodes that share memory with other
	// workloads.
	ReleaseFreedMemory bool

	// Prefault populates the whole arena when Config.NewArena creates it,
	// so that first writes take no page faults. Default false: it commits
	// Capacity bytes of memory at start.
	Prefault bool

	// HugePages says whether the arena is backed by 2 MiB pages: by
	// default (HugePagesAuto) where the system allows them for shared
	// memory. Used by Config.NewArena.
	HugePages HugePages

	// Private backs the arena with this process's own memory instead of
	// shared memory (ArenaOptions.Private): for a node whose workers all
	// run in its process, where nothing else maps the arena. Reads are as
	// fast as a Go slice's, and huge pages follow the system's setting for
	// ordinary memory. Used by Config.NewArena.
	Private bool

	// SpillDirs turns spilling on: sealed objects nobody pins are written
	// to files in these directories (one file per batch, the directories
	// used in turn; a directory that fails a write is skipped for that
	// write) when memory runs short, and read back when a Get needs them.
	// Missing directories are created. Default empty: spilling is off and
	// a creation that does not fit only waits for frees. Spill files have
	// no name once created (spill.Local): their space comes back as their
	// objects are freed, and with the process however it ends. Files are
	// cut to the directories' free space (statfs).
	SpillDirs []string

	// SpillThreshold is the fraction of Capacity that objects in memory
	// may use before the store spills, in (0, 1]. Default
	// DefaultSpillThreshold (0.8, as Ray): spilling starts before
	// creations have to wait. A creation that does not fit spills
	// whatever the threshold.
	SpillThreshold float64

	// SpillBatchBytes is the most bytes fused into one spill file.
	// Default DefaultSpillBatchBytes (100 MiB, as Ray): large sequential
	// writes, few files. Objects at least this large get a file each.
	SpillBatchBytes uint64

	// SpillMaxObjects is the most objects fused into one spill file.
	// Default DefaultSpillMaxObjects (2000, as Ray).
	SpillMaxObjects int

	// SpillTarget, if set, is where spilled objects go instead of
	// SpillDirs (and turns spilling on by itself): another kind of
	// storage, or a local target over a spill.FaultyFS to inject disk
	// faults.
	SpillTarget spill.Target

	// SpillFaults, if set, injects the faults of a full or a slow disk
	// into spilling (package faultplan's spill-full and spill-slow rules).
	SpillFaults SpillFaults
	// OnIO, if set, is told of every spill write and restore read once
	// it is done (on the store actor's goroutine: it must not block); the
	// node's timeline and spans come from it.
	OnIO func(IOEvent)
}

// SpillFaults injects the faults of a full or a slow disk: the spiller
// calls BeforeWrite before each spill file it writes and BeforeRead
// before each restore it reads, on its own goroutine (the store's I/O
// lane), so a sleep there delays spilling and restores, not the store.
type SpillFaults interface {
	// BeforeWrite may sleep (a slow disk); an error fails the write
	// with nothing written (a full disk): the objects stay in memory.
	BeforeWrite() error
	// BeforeRead may sleep.
	BeforeRead()
}

// spilling reports whether the configuration turns spilling on.
func (c Config) spilling() bool { return len(c.SpillDirs) > 0 || c.SpillTarget != nil }

// withDefaults returns c with every unset field at its default. arenaSize is
// the size of the arena the store will manage, or 0 if it does not exist yet.
func (c Config) withDefaults(arenaSize uint64) (Config, error) {
	if c.Capacity == 0 {
		if arenaSize > 0 {
			c.Capacity = arenaSize
		} else {
			ram, err := physicalMemory()
			if err != nil {
				return c, err
			}
			c.Capacity = uint64(float64(ram) * DefaultCapacityFraction)
		}
	}
	if c.CreateTimeout == 0 {
		c.CreateTimeout = DefaultCreateTimeout
	}
	if c.spilling() {
		if c.SpillThreshold == 0 {
			c.SpillThreshold = DefaultSpillThreshold
		}
		if c.SpillBatchBytes == 0 {
			c.SpillBatchBytes = DefaultSpillBatchBytes
		}
		if c.SpillMaxObjects == 0 {
			c.SpillMaxObjects = DefaultSpillMaxObjects
		}
	}
	return c, nil
}

// validate checks a Config that went through withDefaults.
func (c Config) validate() error {
	if c.Capacity < Alignment {
		return fmt.Errorf("objectstore: capacity %d is below the %d-byte minimum", c.Capacity, Alignment)
	}
	if c.CreateTimeout < 0 {
		return fmt.Errorf("objectstore: negative CreateTimeout %v", c.CreateTimeout)
	}
	if !c.spilling() {
		return nil
	}
	if !(c.SpillThreshold > 0 && c.SpillThreshold <= 1) {
		return fmt.Errorf("objectstore: SpillThreshold %v is not in (0, 1]", c.SpillThreshold)
	}
	if c.SpillMaxObjects < 0 {
		return fmt.Errorf("objectstore: negative SpillMaxObjects %d", c.SpillMaxObjects)
	}
	for _, d := range c.SpillDirs {
		if d == "" {
			return errors.New("objectstore: empty directory in SpillDirs")
		}
	}
	return nil
}

// NewArena creates the node's arena as configured: Capacity bytes (30% of
// physical RAM by default), prefaulted if Prefault is set, on huge pages
// as HugePages says.
func (c Config) NewArena(name string) (*Arena, error) {
	c, err := c.withDefaults(0)
	if err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return NewArena(name, c.Capacity, ArenaOptions{Prefault: c.Prefault, HugePages: c.HugePages, Private: c.Private})
}

func physicalMemory() (uint64, error) {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return 0, fmt.Errorf("objectstore: sysinfo: %w", err)
	}
	total := uint64(info.Totalram) * uint64(info.Unit)
	if total == 0 {
		return 0, errors.New("objectstore: sysinfo reports no memory")
	}
	return total, nil
}
