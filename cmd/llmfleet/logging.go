package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// logFlags are the logging flags of "llmfleet serve".
type logFlags struct {
	logFormat *string
	logBodies *bool
	accessLog *bool
}

// addLogFlags defines --log-format and --log-bodies on fs.
func addLogFlags(fs *flag.FlagSet) *logFlags {
	return &logFlags{
		logFormat: fs.String("log-format", "text", "log format: text or json (one JSON object per line)"),
		logBodies: fs.Bool("log-bodies", false, "log the request and response bodies of /v1/messages at debug level (implies -v); never logged otherwise"),
		accessLog: fs.Bool("access-log", true, "log one line per request at info level (warn for a 5xx): method, path, status, latency and, for /v1/messages, route, model, budget, request id; key labels, never keys"),
	}
}

// secondsAttr renders a duration as a number of seconds, its key
// unchanged: the JSON log's durations are in seconds, as in Prometheus.
func secondsAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.Float64Value(a.Value.Duration().Seconds())
	}
	return a
}

// json reports whether the logs are JSON.
func (f *logFlags) json() bool { return *f.logFormat == "json" }

// logger returns the logger the flags ask for, at debug level if verbose
// or --log-bodies.
func (f *logFlags) logger(w io.Writer, verbose bool) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if verbose || *f.logBodies {
		opts.Level = slog.LevelDebug
	}
	switch *f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		opts.ReplaceAttr = secondsAttr
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", *f.logFormat)
	}
}
