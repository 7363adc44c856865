// Package nodeconfig holds a node's settings: Config, the one struct
// every way of starting a node fills, with its documented defaults and
// its validation (WithDefaults).
//
// The settings come from four places, each writing Config's fields
// directly:
//
//   - atoll.Init's options (the root's options.go: an Option sets a
//     field; only driver-only knobs stay in the root's own config);
//   - `atoll start`'s flags, bound to the fields by BindFlags (flags.go:
//     one flag per setting, the field's doc as its usage);
//   - a program embedding a node (package node, whose Config is this
//     one) and the test clusters (internal/testcluster,
//     internal/localcluster), which fill a Config and hand it to a node
//     process as JSON (EnvNode, Environ, FromEnvNode);
//   - the environment (env.go: which ATOLL_* variable sets which field,
//     and when).
//
// The package also holds what the settings refer to: the credentials and
// their resolution into keys and TLS configs (credentials.go), the
// well-known ports, and the per-user state directory with the address
// and secret files (paths.go).
//
// It does not start anything: package internal/node assembles a node
// from a Config.
package nodeconfig
