// Command versiondriver is a driver the security tests build (twice, with
// another version each time) and run against a test cluster: "run" prints
// the version its tasks report; "hold" starts a task that ignores its
// context and sleeps, prints "holding" once it runs, and waits to be
// stopped (SIGTERM, as `atoll job stop` sends); "env" prints, for
// itself, a task and an actor, "clean" or the credentials it finds in
// its environment (os.Environ and /proc/self/environ).
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
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
	taskEnv = atoll.NewFunc1("versiondriver.env", func(_ context.Context, _ int) (string, error) { return credentialsInEnv(), nil })
	envType = atoll.NewActorType("versiondriver.Env", func(context.Context) (*envActor, error) { return &envActor{}, nil })
	envCall = atoll.NewMethod0(envType, "Env", func(*envActor, context.Context) (string, error) { return credentialsInEnv(), nil })
)

type envActor struct{}

// credentialsInEnv is "clean", or the credential variables this process
// has in its environment, now or as it started.
func credentialsInEnv() string {
	var found []string
	initial, _ := os.ReadFile("/proc/self/environ")
	env := append(os.Environ(), strings.Split(string(initial), "\x00")...)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ATOLL_SECRET") || name == "ATOLL_READER_TOKEN" || name == "ATOLL_NATS_CREDS" || name == "ATOLL_NODE" {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return "clean"
	}
	return strings.Join(found, ",")
}

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
	case "env":
		fmt.Println("env: driver", credentialsInEnv())
		v, err := atoll.Get(ctx, taskEnv.Remote(ctx, atoll.Value(0)))
		fmt.Println("env: task", v, err)
		a, err := envType.New(ctx)
		if err != nil {
			fmt.Println("env: actor", err)
			return
		}
		v, err = atoll.Get(ctx, envCall.Remote(ctx, a))
		fmt.Println("env: actor", v, err)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
}
