package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// accessLog writes the access log of "llmfleet serve", one line per
// request (the proxy's Access hook), and counts the create-message calls
// by route: those of the sync route go upstream through the reverse
// proxy, not the dispatcher, whose stats do not see them.
type accessLog struct {
	log       *slog.Logger
	off       bool // --access-log=false: count, do not log
	syncCalls atomic.Int64
}

// record is the proxy's Access hook. A create-message call's line is at
// info level, or warn for a 5xx; another request's at info level too.
func (l *accessLog) record(a proxy.Access) {
	if a.Messages && a.Route == llmfleet.RouteSync {
		l.syncCalls.Add(1)
	}
	if l.off {
		return
	}
	level := slog.LevelInfo
	if a.Status >= 500 {
		level = slog.LevelWarn
	}
	h := l.log.Handler()
	if !h.Enabled(context.Background(), level) {
		return
	}
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
	r := slog.NewRecord(time.Now(), level, "request", 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(context.Background(), r)
}
