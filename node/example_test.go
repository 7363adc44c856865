package node_test

import (
	"context"
	"fmt"
	"log"

	"github.com/atoll-runtime/atoll/node"
)

// A head in a program of your own, serving the dashboard, until the
// program ends.
func Example() {
	ctx := context.Background()
	head, err := node.Start(ctx, node.Config{Head: true, Dashboard: true})
	if err != nil {
		log.Fatal(err)
	}
	defer head.Stop(context.Background())
	fmt.Println("join with: atoll start --address", head.Address())
	fmt.Println("secret:", head.Secret())
	fmt.Println("dashboard:", head.DashboardURL())
}
