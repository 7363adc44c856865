package dashboard

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Bounds of /api/logs/{node} and /api/logs/job/{job}: the bytes of the
// log's end asked for.
const (
	defaultLogBytes = 64 << 10
	maxLogBytes     = 1 << 20
)

// logView is /api/logs/{node}: the end of a node's log file.
type logView struct {
	NodeID string `json:"node_id"`
	// File is the log's path on the node, "" if it has none.
	File      string `json:"file"`
	SizeBytes uint64 `json:"size_bytes"`
	Truncated bool   `json:"truncated"`
	Text      string `json:"text"`
}

func (a *api) nodeLog(ctx context.Context, r *http.Request) (any, error) {
	id, err := parseID("node", r.PathValue("node"))
	if err != nil {
		return nil, err
	}
	n, err := limitParam(r, "bytes", defaultLogBytes, maxLogBytes)
	if err != nil {
		return nil, err
	}
	l, err := a.src.NodeLog(ctx, id, n)
	if err != nil {
		return nil, err
	}
	text, cut := logEnd(l.GetData(), n)
	return logView{NodeID: id.String(), File: l.GetFile(), SizeBytes: l.GetSize(), Truncated: l.GetTruncated() || cut, Text: text}, nil
}

// logEnd is the last n bytes of data as text (invalid UTF-8 replaced),
// and whether that cut some off (the node caps what it sends too).
func logEnd(data []byte, n int) (string, bool) {
	cut := len(data) > n
	if cut {
		data = data[len(data)-n:]
	}
	text := string(data)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return text, cut
}

// jobLogView is /api/logs/job/{job}: the end of a submitted job's log.
type jobLogView struct {
	JobID     string `json:"job_id"`
	SizeBytes uint64 `json:"size_bytes"`
	Truncated bool   `json:"truncated"`
	// Final: the job ended, its log will not grow.
	Final bool   `json:"final"`
	Text  string `json:"text"`
}

func (a *api) jobLog(ctx context.Context, r *http.Request) (any, error) {
	id, err := parseID("job", r.PathValue("job"))
	if err != nil {
		return nil, err
	}
	n, err := limitParam(r, "bytes", defaultLogBytes, maxLogBytes)
	if err != nil {
		return nil, err
	}
	c, err := a.src.JobLog(ctx, id, n)
	if err != nil {
		return nil, err
	}
	text, cut := logEnd(c.GetData(), n)
	return jobLogView{JobID: id.String(), SizeBytes: c.GetSize(), Truncated: c.GetOffset() > 0 || cut, Final: c.GetFinal(), Text: text}, nil
}
