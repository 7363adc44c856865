package atoll_test

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// Inventory is an actor that counts items.
type Inventory struct{ items map[string]int }

// Restock is a task's argument with a handle inside it.
type Restock struct {
	Inventory atoll.ActorHandle[*Inventory]
	Item      string
	Count     int
}

var (
	inventoryType = atoll.NewActorType("example.Inventory", func(context.Context) (*Inventory, error) {
		return &Inventory{items: map[string]int{}}, nil
	})
	addItems = atoll.NewMethod2(inventoryType, "Add", func(inv *Inventory, _ context.Context, item string, n int) (int, error) {
		inv.items[item] += n
		return inv.items[item], nil
	})
	// restock runs in a worker process and calls the actor through the
	// handle it was given.
	restock = atoll.NewFunc1("example.restock", func(ctx context.Context, r Restock) (int, error) {
		var last int
		for range r.Count {
			n, err := atoll.Get(ctx, addItems.Remote(ctx, r.Inventory, atoll.Value(r.Item), atoll.Value(1)))
			if err != nil {
				return 0, err
			}
			last = n
		}
		return last, nil
	})
)

// An ActorHandle passes to tasks and actors like any value: as an
// argument, or inside a struct, a slice or a map.
func ExampleActorHandle_asValue() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(64<<20), atoll.WithNumCPUs(1)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	inv, err := inventoryType.New(ctx)
	if err != nil {
		panic(err)
	}
	n, err := atoll.Get(ctx, restock.Remote(ctx, atoll.Value(Restock{Inventory: inv, Item: "pears", Count: 3})))
	fmt.Println(n, err)
	n, err = atoll.Get(ctx, addItems.Remote(ctx, inv, atoll.Value("pears"), atoll.Value(2)))
	fmt.Println(n, err)
	// Output:
	// 3 <nil>
	// 5 <nil>
}
