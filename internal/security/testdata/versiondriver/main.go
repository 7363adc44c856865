// Command versiondriver is a driver the security tests build (twice, with
// another version each time) and run against a test cluster: "run" prints
// the version its tasks report; "hold" starts a task that ignores its
// context and sleeps, prints "holding" once it runs, and waits to be
// stopped (SIGTERM, as `atoll job stop` sends).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/atoll-runtime/atoll"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

var (
	buildVersion = atoll.NewFunc1("versiondriver.version", func(_ context.Context, _ int) (string, error) { return version, nil })
	hold         = atoll.NewFunc1("versiondriver.hold", func(_ context.Context, d int) (int, error) {
		time.Sleep(time.Duration(d) * time.Second) // ignores its context on purpose
		return d, nil
	})
	started = atoll.NewFunc1("versiondriver.started", func(_ context.Context, x int) (int, error) { return x, nil })
)

func main() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(32<<20)); err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		os.Exit(1)
	}
	defer atoll.Shutdown(ctx)
	switch mode := os.Args[len(os.Args)-1]; mode {
	case "run":
		for i := range 4 {
			v, err := atoll.Get(ctx, buildVersion.Remote(ctx, atoll.Value(i)))
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Println("version:", v)
		}
	case "hold":
		if _, err := atoll.Get(ctx, started.Remote(ctx, atoll.Value(1))); err != nil {
			fmt.Println("error:", err)
			return
		}
		ref := hold.Remote(ctx, atoll.Value(600))
		fmt.Println("holding")
		_, _ = atoll.Get(ctx, ref)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
}
