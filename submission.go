package atoll

import (
	"os"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/jobs"
)

// submissionID is the id of the submitted job (`atoll job submit`) whose
// driver this process is, from jobs.EnvSubmissionID, or nil: the driver
// records it in its own job's entry (JobInfo.submission_id).
func submissionID() []byte {
	id, err := ids.FromHex(os.Getenv(jobs.EnvSubmissionID))
	if err != nil || id.IsZero() {
		return nil
	}
	return id.Bytes()
}
