package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// credentialFlags are the flags of `atoll start` that prove a node to
// its cluster; each defaults to its environment variable (nodeconfig.EnvSecret
// and the like), read by the node itself.
type credentialFlags struct {
	secretFile string
	natsCreds  string
	tlsCert    string
	tlsKey     string
	tlsCA      string
	// generated is the secret a head made because none was given (saved
	// in nodeconfig.SecretFile(); printed once).
	generated clusterkey.Secret
}

func (c *credentialFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&c.secretFile, "secret-file", "", "`FILE` (0600) holding the cluster secret (default $"+nodeconfig.EnvSecret+", $"+nodeconfig.EnvSecretFile+", then "+nodeconfig.SecretFile()+"; a head without one generates it there)")
	fl.StringVar(&c.natsCreds, "nats-creds", "", "NATS credentials `FILE` for a cluster on an existing NATS server (--nats; default $"+nodeconfig.EnvNATSCreds+")")
	fl.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate `FILE`: serve TLS on the NATS and transfer ports (default $"+nodeconfig.EnvTLSCert+")")
	fl.StringVar(&c.tlsKey, "tls-key", "", "PEM key `FILE` of --tls-cert (default $"+nodeconfig.EnvTLSKey+")")
	fl.StringVar(&c.tlsCA, "tls-ca", "", "PEM `FILE` of the CA that signed the cluster's certificates: verify peers, and require client certificates (mutual TLS) (default $"+nodeconfig.EnvTLSCA+")")
}

// apply puts the flags in cfg and, on a head that finds no secret,
// generates one and saves it in nodeconfig.SecretFile() for the nodes, drivers
// and commands of this machine (a restarted head reuses it). A head given
// a secret records it there too.
func (c *credentialFlags) apply(cfg *nodeconfig.Config) error {
	cfg.Credentials = nodeconfig.Credentials{SecretFile: c.secretFile, NATSCreds: c.natsCreds, TLSCert: c.tlsCert, TLSKey: c.tlsKey, TLSCA: c.tlsCA}
	if !cfg.Head {
		return nil
	}
	secret, err := nodeconfig.Credentials{SecretFile: c.secretFile}.FindSecret()
	if err != nil {
		return err
	}
	if secret.IsZero() {
		if secret, err = clusterkey.Generate(); err != nil {
			return err
		}
		c.generated = secret
	}
	if cur, err := clusterkey.Load(nodeconfig.SecretFile()); err == nil && cur == secret {
		return nil
	}
	if err := makePrivateDir(nodeconfig.StateDir()); err != nil {
		return err
	}
	if err := clusterkey.Save(nodeconfig.SecretFile(), secret); err != nil {
		return fmt.Errorf("save the cluster secret: %w", err)
	}
	return nil
}

// printSecret tells the user of a head how others join it: the secret
// file, and the secret itself once, when it was just generated.
func (c *credentialFlags) printSecret(w io.Writer, addr string) {
	file := nodeconfig.SecretFile()
	fmt.Fprintf(w, "cluster secret: %s (0600; nodes, drivers and commands on this machine read it)\n", file)
	if !c.generated.IsZero() {
		fmt.Fprintf(w, "  generated now, shown this once: %s\n", c.generated.Hex())
	}
	fmt.Fprintf(w, "join more nodes: atoll start --address %s\n", addr)
	fmt.Fprintf(w, "  on another machine, give it the secret: %s=<secret> atoll start --address %s (or %s=FILE)\n", nodeconfig.EnvSecret, addr, nodeconfig.EnvSecretFile)
}

// newReaderTokenCmd prints the cluster's reader token: what a machine
// without the secret needs to read the cluster (status, list, memory,
// timeline) and change nothing.
func newReaderTokenCmd() *cobra.Command {
	var secretFile string
	cmd := &cobra.Command{
		Use:   "reader-token [--secret-file FILE]",
		Short: "Print the cluster's read-only token (for status, list, memory and timeline without the secret)",
		Long: `Prints the password of the cluster's read-only user, derived from the cluster
secret (found as 'atoll start' finds it: --secret-file, $` + nodeconfig.EnvSecret + `, $` + nodeconfig.EnvSecretFile + `,
then ` + nodeconfig.SecretFile() + `). Give it as $` + nodeconfig.EnvReaderToken + ` to a
process or a person who should see the cluster but not act on it: with it,
'atoll status', 'list', 'memory' and 'timeline' work, and the head's NATS
refuses every change (submitting work, freeing objects, killing actors or
nodes, registering nodes). It does not reveal the secret.`,
		Args:                  args(0),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secret, err := nodeconfig.Credentials{SecretFile: secretFile}.FindSecret()
			if err != nil {
				return err
			}
			if secret.IsZero() {
				return errs.Invalidf("no cluster secret found (--secret-file, $%s, $%s, or %s)", nodeconfig.EnvSecret, nodeconfig.EnvSecretFile, nodeconfig.SecretFile())
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), secret.NATSPassword(cluster.ReaderUser))
			return err
		},
	}
	cmd.Flags().StringVar(&secretFile, "secret-file", "", "`FILE` (0600) holding the cluster secret")
	return cmd
}
