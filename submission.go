package atoll

import (
	"os"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/node"
)

// submissionID is the id of the submitted job (`atoll job submit`) whose
// driver this process is, from node.EnvSubmissionID, or nil: the driver
// records it in its own job's entry (JobInfo.submission_id).
func submissionID() []byte {
	id, err := ids.FromHex(os.Getenv(node.EnvSubmissionID))
	if err != nil || id.IsZero() {
		return nil
	}
	return id.Bytes()
}
