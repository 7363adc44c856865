// Package membership is atoll's gossip membership among nodes (raylets): a
// small adapter over github.com/hashicorp/memberlist, which protoactor-go
// lacks as a cluster provider.
//
// A [Member] gossips the node's id (as the memberlist node name, hex) and an
// opaque metadata blob (the raylet address and resources, encoded by the
// caller) and runs memberlist's SWIM failure detector, tuned from a single
// failure-detection budget in [Config].
//
// Memberlist calls its delegates with its own locks held, so they must never
// block. The delegates here copy the node information into a typed event
// ([NodeJoined], [NodeLeft], [NodeUpdated]) and append it to an unbounded
// per-subscriber queue; one goroutine per subscriber drains the queue into a
// protoactor PID ([Config.Events]) or a channel ([Member.Subscribe]). A slow
// or stopped receiver therefore delays only its own deliveries, never the
// failure detector.
//
// Events describe the other nodes: the local node's own join is not reported.
// A graceful [Member.Leave] is reported to the others as NodeLeft{Dead: false}
// and a failure as NodeLeft{Dead: true}. Memberlist v0.7.0 does not pass the
// leave/dead state to NotifyLeave (the Node it hands over always reads
// StateAlive), so Leave first gossips a "leaving" flag in a one-byte header of
// the node metadata; a node seen leaving without that flag is reported dead.
package membership
