package cluster

import (
	"errors"
	"log/slog"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The head's reports of deaths to the GCS (ReportDead). The GCS writes
// the node's death and then its actors' new states; a write that fails
// leaves some of those actors ALIVE at the dead node's address, and their
// callers would keep calling there. So a report lives until the GCS
// answers it (ReportAnswered): one answered UNAVAILABLE (a write, or the
// request, failed: a retry may succeed; the GCS applies a death reported
// again to the actors still left on the node) is sent again at a lease
// tick, after a backoff doubling from reportFirstBackoff to
// reportMaxBackoff, at most reportAttempts times in all; any other answer
// ends it (a refusal no retry changes is logged). A report sent and not
// answered within reportAnswerTimeout (the gateway always answers, but a
// simulated GCS's answer may be lost) counts as failed. The reports are
// those of the dead nodes remembered (at most MaxDeadNodes): a node
// forgotten takes its report with it. A gateway that stops sends none.

const (
	reportFirstBackoff = time.Second
	reportMaxBackoff   = 30 * time.Second
	reportAttempts     = 10
	// reportAnswerTimeout is above the 10 s the gateway gives a report.
	reportAnswerTimeout = 15 * time.Second
)

// deathReport is a ReportDead the GCS has not yet accepted.
type deathReport struct {
	left     bool
	reason   string
	attempts int
	// inFlight: sent at sent, not answered yet; else due is when it is
	// sent again.
	inFlight  bool
	sent, due time.Time
}

// reportDead sends the first report of node's death.
func (f *Forwarder) reportDead(now time.Time, node ids.NodeID, left bool, reason string) {
	if _, ok := f.reports[node]; ok {
		return
	}
	r := &deathReport{left: left, reason: reason}
	f.reports[node] = r
	f.sendReport(now, node, r)
}

func (f *Forwarder) sendReport(now time.Time, node ids.NodeID, r *deathReport) {
	r.attempts++
	r.inFlight, r.sent = true, now
	f.emit(ReportDead{Node: node, Left: r.left, Reason: r.reason})
}

// reportAnswered applies the GCS's answer to a report.
func (f *Forwarder) reportAnswered(now time.Time, e ReportAnswered) {
	r, ok := f.reports[e.Node]
	switch {
	case !ok:
		// Accepted or given up already, or forgotten.
	case e.Err == nil:
		delete(f.reports, e.Node)
	case !errors.Is(e.Err, errs.ErrUnavailable):
		delete(f.reports, e.Node)
		f.log(slog.LevelError, "cluster: the GCS refused a node's death", "node", e.Node.Short(), "err", e.Err)
	case r.inFlight:
		f.reportFailed(now, e.Node, r, e.Err)
	default:
		// A failure that came after its timeout: counted already.
	}
}

// reportFailed schedules the next attempt of a report, or gives it up.
func (f *Forwarder) reportFailed(now time.Time, node ids.NodeID, r *deathReport, err error) {
	if r.attempts >= reportAttempts {
		delete(f.reports, node)
		f.log(slog.LevelError, "cluster: gave up telling the GCS of a node's death; its actors may still be listed on it",
			"node", node.Short(), "attempts", r.attempts, "err", err)
		return
	}
	backoff := min(reportFirstBackoff<<(r.attempts-1), reportMaxBackoff)
	r.inFlight, r.due = false, now.Add(backoff)
	f.log(slog.LevelWarn, "cluster: telling the GCS of a node's death failed; retrying",
		"node", node.Short(), "attempt", r.attempts, "retry_in", backoff, "err", err)
}

// retryReports, at a lease tick, sends again the reports due and counts
// as failed those whose answer is overdue.
func (f *Forwarder) retryReports(now time.Time) {
	for _, node := range sortedNodes(f.reports) {
		r := f.reports[node]
		switch {
		case r.inFlight && now.Sub(r.sent) >= reportAnswerTimeout:
			f.reportFailed(now, node, r, errs.Unavailablef("the GCS did not answer within %v", reportAnswerTimeout))
		case !r.inFlight && !now.Before(r.due):
			f.sendReport(now, node, r)
		}
	}
}
