// Package placement is the head's placement-group manager as a pure state
// machine (Manager), after Ray's GCS placement group manager: it keeps
// the cluster's placement groups, places their bundles on nodes by their
// strategy (Schedule) and reserves them by two-phase commit with the
// nodes' raylets; the GCS's placement actor (internal/gcs) is its shell.
//
// # Events and effects
//
// Events are method calls that take the current time: CheckCreate and
// Create (the shell then writes the group's entry to the store and
// answers once it is stored), CheckRemove and Remove (likewise: the
// removed entry stays, for listing, until it is forgotten), NodeUp
// (a node's totals from the GCS, or a load report with what it has
// available and the bundles it holds), Waiting (the groups a load
// report's demands wait for), NodeDown, Reply (a node's answer to a
// step), Tick and, on a restarted head, Restore and Synced. Effects come
// out of Effects in order: Send (a BundleOp to a node), Persist and
// Forget (the store: a change, a removed entry forgotten past
// MaxRemoved), Changed (answer the group's waiters, publish the change; a
// removal reaches every node, whose waiting tasks of the group fail) and
// Notify (tell a node again of a removal it missed). The
// Manager does no I/O, reads no clock and starts no goroutine
// (internal/lint checks); testdata/*.txt script it (manager_test.go).
//
// # Two-phase commit
//
// A group not fully placed is scheduled over the live nodes that are not
// draining, with the room their latest load reports show less what the
// Manager's own prepares in flight take (Schedule: STRICT_PACK, PACK,
// STRICT_SPREAD, SPREAD, Ray's semantics; ties by node id). The Manager
// then sends each chosen node a PREPARE of its bundles (the raylet
// reserves all of them out of its available resources, or none) and waits
// for every answer (a transaction on a single node asks it to commit at
// once: its all-or-none prepare is then the whole commit, one round trip
// instead of two). All prepared: it sends each a COMMIT (the raylet
// turns them into the group's resources, which its tasks and actors
// demand) and, every commit answered, the group is CREATED and its
// placement persisted. A refusal, an error or no answer within OpTimeout
// aborts: a RELEASE goes to every node of the transaction (a release is
// idempotent, and one that arrives before its prepare leaves a stray
// bundle, which reconciliation releases), and the group stays PENDING
// with the refusal as its reason, tried again when the cluster changes
// (a node comes or goes, a group is removed) or every RetryInterval. A
// commit a node fails (it lost the prepared bundle) places that node's
// bundles again. Groups are tried in creation order, one transaction per
// group at a time; transactions of different groups run at once.
//
// # Failures and reconciliation
//
// A node that dies (NodeDown) loses its bundles (those of a commit in
// flight too, answered or not: they are placed again when it ends): their
// groups go RESCHEDULING and only the lost bundles are placed again, next
// to the others by the strategy (STRICT_SPREAD avoids the nodes holding the
// group's other bundles); the actors that ran in them restart elsewhere by
// their own restart policy (their owner resubmits them, placed in the same
// bundle). A group that is not detached is removed when the node of the
// process that created it goes (its driver exited). Every load report
// lists the bundles its node holds: one the Manager did not place there
// and is not preparing is released (a leftover of an aborted or removed
// group), and released again while the reports still list it past
// ReportGrace after the release was sent (a RELEASE lost on its way);
// one it committed there that the node's reports stop listing past
// ReportGrace is placed again; and where its demands show work waiting
// for a group the Manager removed (the node missed the removal's notice),
// the node is told of the removal again (Waiting, Notify), at most once a
// ReportGrace. That is also how a restarted head, which
// reloads its groups with their placement (Restore), catches up with
// what changed while it was down.
//
// Pending groups are infeasible when no live node could hold them even
// empty: they stay pending (the autoscaler adds nodes for them when a
// node type fits), with a reason that says what is missing.
package placement
