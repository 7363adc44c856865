package atoll

import (
	"os"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// notRegistered is the error of a task or actor whose function, type or
// method name the process running it does not know. The usual cause is a
// registration that runs only in the driver, after Init (inside main or a
// function it calls): worker processes re-execute the binary and never
// get there.
func notRegistered(what, name string) error {
	return errs.Invalidf("%s %q is not registered in the worker binary (%s): register it at package level "+
		"(var f = atoll.NewFunc1(...), or in an init function), not after atoll.Init: worker processes run the same binary "+
		"but only its package initialisation, so registrations made later in main exist only in the driver", what, name, binaryName())
}

// binaryName is this program's path, as the process runs it.
func binaryName() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}
