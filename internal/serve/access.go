package serve

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/llmfleet/llmfleet/observe"
	"github.com/llmfleet/llmfleet/proxy"
)

// accessLog writes the access log of "llmfleet serve", one line per
// request (the proxy's Access hook).
type accessLog struct {
	log *slog.Logger
	off bool // --access-log=false: do not log
	// lines takes the writing of the lines off the goroutines answering
	// the callers.
	lines *observe.Lane[accessLine]
	// text, when set, is the writer of log's handler, a slog.TextHandler
	// with no options but its level: the lines are written to it
	// directly (appendAccessLine), in buf, which only the lane uses.
	text io.Writer
	buf  []byte
}

// accessLine is a line of the access log waiting to be written.
type accessLine struct {
	a     proxy.Access
	at    time.Time
	level slog.Level
}

// newAccessLog returns an access log writing to log, or,
// when off, nothing; text, if not nil, is the writer of log's text
// handler (see Config.AccessText). Close it when done.
func newAccessLog(log *slog.Logger, off bool, text io.Writer) *accessLog {
	l := &accessLog{log: log, off: off, text: text}
	l.lines = observe.NewLane(4096, l.write)
	return l
}

// close writes the lines still queued, waiting until ctx ends at most.
func (l *accessLog) close(ctx context.Context) error { return l.lines.Close(ctx) }

// record is the proxy's Access hook. A create-message call's line is at
// info level, or warn for a 5xx; another request's at info level too.
func (l *accessLog) record(a proxy.Access) {
	if l.off {
		return
	}
	level := slog.LevelInfo
	if a.Status >= 500 {
		level = slog.LevelWarn
	}
	if !l.log.Handler().Enabled(context.Background(), level) {
		return
	}
	l.lines.Add(accessLine{a: a, at: time.Now(), level: level})
}

// write writes a line of the log.
func (l *accessLog) write(line accessLine) {
	if l.text != nil {
		l.buf = appendAccessLine(l.buf[:0], line)
		_, _ = l.text.Write(l.buf) // as the handler, which has nowhere to say it failed
		return
	}
	a := line.a
	var buf [10]slog.Attr
	attrs := append(buf[:0],
		slog.String("method", a.Method),
		slog.String("path", a.Path),
		slog.Int("status", a.Status),
		slog.Duration("latency", a.Latency))
	if a.Messages {
		attrs = append(attrs,
			slog.String("route", string(a.Route)),
			slog.String("model", a.Model),
			slog.Duration("budget", a.Budget),
			slog.String("request_id", a.RequestID))
	}
	if a.Key != "" {
		attrs = append(attrs, slog.String("key", a.Key))
	}
	// Straight to the handler: a Logger would look up its caller's
	// program counter, for a source no handler of serve prints.
	r := slog.NewRecord(line.at, line.level, "request", 0)
	r.AddAttrs(attrs...)
	_ = l.log.Handler().Handle(context.Background(), r)
}
