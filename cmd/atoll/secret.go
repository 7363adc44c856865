package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// credentialFlags is what `atoll start` does with a node's credentials
// beyond the flags that set them (--secret-file, --nats-creds, --tls-*,
// bound to nodeconfig.Credentials; each defaults to its environment
// variable, read by the node itself): a head's secret.
type credentialFlags struct {
	// generated is the secret a head made because none was given (saved
	// in nodeconfig.SecretFile(); printed once).
	generated clusterkey.Secret
}

// apply makes sure a head has a secret: one that finds none generates
// one and saves it in nodeconfig.SecretFile() for the nodes, drivers and
// commands of this machine (a restarted head reuses it). A head given a
// secret records it there too.
func (c *credentialFlags) apply(cfg *nodeconfig.Config) error {
	if !cfg.Head {
		return nil
	}
	secret, err := nodeconfig.Credentials{SecretFile: cfg.SecretFile}.FindSecret()
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
