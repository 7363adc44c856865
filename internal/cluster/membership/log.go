package membership

import (
	"bytes"
	"context"
	"log/slog"
)

// slogWriter adapts memberlist's *log.Logger output ("[LEVEL] memberlist:
// message\n") to slog: every line is logged at debug level, memberlist's own
// level kept as an attribute.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\n")
	level := ""
	if len(line) > 0 && line[0] == '[' {
		if i := bytes.IndexByte(line, ']'); i > 0 {
			level = string(line[1:i])
			line = bytes.TrimLeft(line[i+1:], " ")
		}
	}
	w.l.LogAttrs(context.Background(), slog.LevelDebug, string(line),
		slog.String("component", "memberlist"), slog.String("memberlist_level", level))
	return len(p), nil
}
