package node

import "github.com/atoll-runtime/atoll/internal/nodeconfig"

// NodeReadyPrefix starts the line a node started through EnvNode prints
// once it is ready (nodeconfig.NodeReadyPrefix).
const NodeReadyPrefix = nodeconfig.NodeReadyPrefix

// NodeReady describes a started node: the JSON after NodeReadyPrefix, and
// what `atoll start` records for `atoll stop` (nodeconfig.NodeReady).
type NodeReady = nodeconfig.NodeReady
