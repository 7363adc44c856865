package node

import (
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// resolveSecurity resolves the node's credentials. An embedded node
// needs none (nothing outside its process reaches it); a head without a
// secret generates one (`atoll start --head` saves it in
// nodeconfig.SecretFile first, so this only happens to heads started
// through the Go API: Node.Secret tells it); any other node needs the
// cluster's.
func (n *Node) resolveSecurity() error {
	if n.cfg.Embedded() {
		return nil
	}
	var err error
	if n.sec, err = n.cfg.Credentials.Resolve(); err != nil {
		return err
	}
	switch {
	case !n.sec.Secret.IsZero():
	case n.cfg.Head:
		if n.sec.Secret, err = clusterkey.Generate(); err != nil {
			return err
		}
		n.log.Info("generated a cluster secret for this head (not saved: give nodes Node.Secret)", "fingerprint", n.sec.Secret.Fingerprint())
	default:
		return nodeconfig.ErrNoSecret(n.cfg.Address)
	}
	n.log.Debug("cluster credentials", "secret", n.sec.Secret.Fingerprint(), "tls", n.sec.ServerTLS != nil)
	return nil
}

// Secret is the cluster secret this node holds (hex; "" on an embedded
// node): what other nodes and drivers need to join (Credentials.Secret).
func (n *Node) Secret() string {
	if n.sec.Secret.IsZero() {
		return ""
	}
	return n.sec.Secret.Hex()
}
