package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/llmfleet/llmfleet/internal/servestate"
	"github.com/llmfleet/llmfleet/observe"
	"github.com/llmfleet/llmfleet/proxy"
)

// Run serves until ctx ends, then shuts down in order: it stops
// accepting connections, closes the dispatcher (pooled requests go out,
// in-flight batches are awaited up to cfg.ShutdownTimeout), waits for
// the callers still connected (those parked on their connections alone
// too: proxy.Server.Drain) and closes the store. Whatever is still
// pending then is in the store, and the next start picks it up. The
// startup line goes to stdout.
func Run(ctx context.Context, cfg Config, stdout io.Writer) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	logger := cfg.Logger
	// Listen first: a busy port fails before any state is made. Until
	// the state is open, /healthz answers and /readyz and the API 503.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %v", cfg.Listen, err)
	}
	fr := startFront(ln, cfg.ReadHeaderTimeout)
	defer fr.hs.Close() // on an early return; a no-op after Shutdown

	if cfg.State.Lease < 3*time.Millisecond {
		return fmt.Errorf("--replica-lease must be at least 3ms")
	}
	if cfg.State.Replica == "" {
		host, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		cfg.State.Replica = host + ":" + port
	}
	cfg.State.Logger = logger
	state, err := servestate.Open(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() { // last: after the dispatcher and the callers are done
		if err := state.DB.Close(); err != nil {
			logger.Warn("closing the store", "err", err)
		}
	}()
	logger.Info("durable state", "db", state.Where, "secret", state.Secret, "retention", cfg.Retention)
	e, err := openEngine(&cfg, state)
	if err != nil {
		return err
	}
	defer e.closeObserver() // before the store closes: the last ledger entries go in
	access := newAccessLog(logger, cfg.NoAccessLog, cfg.AccessText)
	srv := newProxy(&cfg, state, e, access)
	var api http.Handler = srv.Handler()
	if cfg.LogBodies {
		api = observe.LogBodies(api, logger)
	}
	fr.ready.serve(openAIWebhooks(&cfg, e).Mount(e.obs.Handler(api)))
	openaiFace := cfg.OpenAIUpstream.String()
	if cfg.Credentials != nil && cfg.Credentials.OpenAI.IsZero() {
		openaiFace = "closed"
	}
	startupLine(stdout, cfg.JSON, "http://"+ln.Addr().String(), cfg.Upstream.String(), openaiFace)
	return fr.serveUntil(ctx, cfg.ShutdownTimeout, e, srv, access)
}

// front is the listener of serve and its HTTP server, whose handler is
// the readiness gate in front of the proxy.
type front struct {
	hs      *http.Server
	ready   *readiness
	stopped chan struct{} // closed once the listener is
	errc    chan error    // what Serve returned
}

// startFront serves the readiness gate on ln.
func startFront(ln net.Listener, readHeaderTimeout time.Duration) *front {
	fr := &front{ready: &readiness{}, stopped: make(chan struct{}), errc: make(chan error, 1)}
	fr.hs = &http.Server{Handler: fr.ready, ReadHeaderTimeout: readHeaderTimeout}
	fr.hs.RegisterOnShutdown(func() { close(fr.stopped) })
	go func() { fr.errc <- fr.hs.Serve(ln) }()
	return fr
}

// serveUntil waits until ctx ends or the server fails, then shuts down
// in order (see Run) and logs the stopping line with the counts.
func (fr *front) serveUntil(ctx context.Context, timeout time.Duration, e *engine, srv *proxy.Server, access *accessLog) error {
	logger := e.logger
	var serveErr error
	select {
	case serveErr = <-fr.errc:
	case <-ctx.Done():
	}
	fr.ready.stop()
	logger.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	shutErr := make(chan error, 1)
	go func() { shutErr <- fr.hs.Shutdown(shutCtx) }()
	if serveErr == nil {
		<-fr.stopped // listeners closed: no new request arrives
	}
	if err := e.d.Close(shutCtx); err != nil {
		logger.Warn("dispatcher closed before its batches ended", "err", err)
	}
	if err := srv.Drain(shutCtx); err != nil { // callers parked on their connections alone
		logger.Warn("parked callers still waiting at shutdown", "err", err)
	}
	if err := <-shutErr; err != nil {
		logger.Warn("callers still connected at shutdown", "err", err)
		fr.hs.Close()
	}
	if serveErr == nil {
		serveErr = <-fr.errc
	}
	if err := access.close(shutCtx); err != nil {
		logger.Warn("access log lines not written at shutdown", "err", err)
	}
	logger.LogAttrs(context.Background(), slog.LevelInfo, "stopped", statsAttr(e.d.Stats(), e.obs.Summary().SyncCalls))
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return serveErr
}
