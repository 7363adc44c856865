// Package util holds what Ray users build on, written on atoll's public
// SDK (as Ray's ray.util): ActorPool, which spreads calls over a set of
// actors, and Queue, a bounded FIFO queue that lives in an actor and is
// shared by drivers, tasks and actors.
//
//	pool := util.NewActorPool[*Worker, int, int](h1, h2, h3)
//	for r, err := range pool.Map(ctx, func(ctx context.Context, w atoll.ActorHandle[*Worker], v int) atoll.ObjectRef[int] {
//		return square.Remote(ctx, w, atoll.Value(v))
//	}, []int{1, 2, 3, 4}) {
//		fmt.Println(r, err) // 1, 4, 9, 16 in input order
//	}
//
//	q, err := util.NewQueue[string](ctx, 100) // holds at most 100 items
//	err = q.Put(ctx, "job 1")                 // waits while the queue is full
//	s, err := q.Get(ctx)                      // waits while it is empty
//
// A Queue handle passes to tasks and actors as an argument (it travels as
// the queue actor's name and is looked up again where it is used).
package util
