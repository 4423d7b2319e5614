package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/simulate"
)

func init() { commands["emulate"] = runEmulate }

const emulateUsage = `usage: llmfleet emulate [flags]

Serves a local stand-in for the Anthropic Messages and Message Batches APIs
(and, with --openai-addr, the OpenAI API; with --gemini-addr, the Gemini
API) until interrupted: wire formats,
batch turnarounds, usage and prompt caching as the real APIs have them,
for tests and demos offline.

Prompt caching: blocks with cache_control are cached per API key, in two
caches: the sync cache (messages, streamed or not) and the batch cache
(batch requests, when each finishes). A request reads the longest live
cached prefix of its prompt in a cache it reaches: its own route's with
probability --cache-sync-hit-rate or --cache-batch-hit-rate (batch hits
are best effort on the real API, "30% to 98%"), the other route's with
probability --cache-cross-rate (0: a batch never reads what a sync call
wrote, as measured). It writes the breakpoints past what it read,
billed as cache_creation.ephemeral_5m_input_tokens and
ephemeral_1h_input_tokens. The draws are seeded by --seed and the request.

Gemini (--gemini-addr): generateContent and streamGenerateContent, the
flex tier (serviceTier "flex": answered after --gemini-flex-latency, or
shed, unbilled, for --gemini-flex-shed of the calls with
--gemini-flex-shed-status and a RetryInfo of --gemini-retry-delay), Batch
Mode inline and from a file (PENDING for --gemini-batch-pending, ended
--gemini-turnaround after its create), the Files API, models and
countTokens, behind x-goog-api-key or ?key= (any key).

` + envUsage + `
flags:
`

// runEmulate runs the provider emulator until ctx ends.
func runEmulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("emulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), emulateUsage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:8788", "address to listen on")
	turn := fs.String("turnaround", "2s-6s", `batch turnaround: a duration ("5s") or a uniform range ("2s-6s"), for every model, then model=range pairs for some ("2s-6s,claude-opus-4-6=30s-90s")`)
	seed := fs.Int64("seed", 0, "seed of the emulator's random choices")
	latency := fs.String("latency", "0", "delay of a synchronous /v1/messages reply, in the shape of --turnaround (models no range names take 0)")
	straggler := fs.String("straggler", "", "FRACTION:FACTORx: that fraction of the batches take FACTOR times their turnaround (e.g. 0.05:10x), as llmfleet simulate --straggler")
	openaiAddr := fs.String("openai-addr", "", `address of a second listener serving the OpenAI API emulator (chat completions, responses, embeddings, flex, files and batches); "" for none, "127.0.0.1:0" for any free port`)
	openaiTurn := fs.Duration("openai-turnaround", openaiemu.DefaultBatchTurnaround, "how long an OpenAI batch takes")
	gf := addGeminiFlags(fs)
	verbose := fs.Bool("v", false, "log every request")
	cf := addCacheFlags(fs, cachesim.Default())
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	turnaround, err := parseTurnarounds(*turn)
	if err != nil {
		return err
	}
	syncLatency, err := parseLatencies(*latency)
	if err != nil {
		return err
	}
	strag, err := simulate.ParseStraggler(*straggler)
	if err != nil {
		return err
	}
	turnaround = withStragglers(turnaround, strag.Fraction, strag.Factor)
	cache, err := cf.config()
	if err != nil {
		return err
	}
	gemini, err := gf.server(*seed)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv := &emulator.Server{
		Seed:        *seed,
		SyncLatency: syncLatency,
		Logger:      logger,
		Turnaround:  turnaround,
		Cache:       &cache,
	}
	var l listeners
	if err := l.add(*listen, srv, stdout, "emulator"); err != nil {
		return err
	}
	if *openaiAddr != "" {
		if err := l.add(*openaiAddr, &openaiemu.Server{BatchTurnaround: *openaiTurn}, stdout, "openai emulator"); err != nil {
			return err
		}
	}
	if *gf.addr != "" {
		if err := l.add(*gf.addr, gemini, stdout, "gemini emulator"); err != nil {
			return err
		}
	}
	return serveUntil(ctx, l.servers, l.lns)
}

// listeners are the emulate command's servers and their listeners.
type listeners struct {
	servers []*http.Server
	lns     []net.Listener
}

// add listens on addr for h and says where on stdout as "<name>
// listening on http://<addr>"; on an error it closes the listeners
// already open.
func (l *listeners) add(addr string, h http.Handler, stdout io.Writer, name string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		for _, o := range l.lns {
			o.Close()
		}
		return err
	}
	l.servers = append(l.servers, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second})
	l.lns = append(l.lns, ln)
	fmt.Fprintf(stdout, "%s listening on http://%s\n", name, ln.Addr())
	return nil
}

// serveUntil serves each server on its listener until ctx ends (then
// shuts them all down) or one fails (then closes them all).
func serveUntil(ctx context.Context, servers []*http.Server, listeners []net.Listener) error {
	errc := make(chan error, len(servers))
	for i, hs := range servers {
		go func() { errc <- hs.Serve(listeners[i]) }()
	}
	select {
	case err := <-errc:
		for _, hs := range servers {
			hs.Close()
		}
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	for _, hs := range servers {
		if serr := hs.Shutdown(shutCtx); err == nil {
			err = serr
		}
	}
	for range servers {
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	return err
}

// parseTurnarounds parses the --turnaround flag (see
// emulator.ParseDurations).
func parseTurnarounds(s string) (func(model string, r *rand.Rand) time.Duration, error) {
	return emulator.ParseDurations("--turnaround", s)
}

// parseLatencies parses the --latency flag: as --turnaround, but models
// no range names take 0.
func parseLatencies(s string) (func(model string, r *rand.Rand) time.Duration, error) {
	return emulator.ParseDurations("--latency", latencyShape(s))
}

// latencyShape returns s, a latency flag's value, with "0" for the models
// no range names when it names none for every model.
func latencyShape(s string) string {
	if first, _, _ := strings.Cut(s, ","); strings.Contains(first, "=") {
		return "0," + s
	}
	return s
}

// withStragglers returns draw with fraction of its draws factor times
// longer (draw itself when fraction is 0).
func withStragglers(draw func(string, *rand.Rand) time.Duration, fraction, factor float64) func(string, *rand.Rand) time.Duration {
	if fraction <= 0 {
		return draw
	}
	return func(model string, r *rand.Rand) time.Duration {
		d := draw(model, r)
		if r.Float64() < fraction {
			d = time.Duration(float64(d) * factor)
		}
		return d
	}
}

// cacheFlags are the prompt cache flags of emulate and simulate, which
// set a cachesim.Config.
type cacheFlags struct {
	syncHit, batchHit, cross *float64
	minTokens                *int64
}

// addCacheFlags adds the prompt cache flags to fs, with def's values as
// their defaults.
func addCacheFlags(fs *flag.FlagSet, def cachesim.Config) *cacheFlags {
	return &cacheFlags{
		syncHit: fs.Float64("cache-sync-hit-rate", def.SyncHitRate,
			"probability that a sync (or flex) call reads what the sync route cached, from 0 to 1"),
		batchHit: fs.Float64("cache-batch-hit-rate", def.BatchHitRate,
			"probability that a batch request reads what batch requests cached, from 0 to 1 (best effort on the real API: 0.3 to 0.98 reported)"),
		cross: fs.Float64("cache-cross-rate", def.CrossRate,
			"probability that a request reads what the other route cached (a batch what a sync call wrote, or the reverse), from 0 to 1"),
		minTokens: fs.Int64("cache-min-tokens", def.MinTokens,
			"shortest prefix the prompt cache holds, in tokens (the real API's is per model, 1024 to 4096)"),
	}
}

// config returns the cache configuration the flags set.
func (f *cacheFlags) config() (cachesim.Config, error) {
	for _, r := range []struct {
		name string
		v    float64
	}{{"--cache-sync-hit-rate", *f.syncHit}, {"--cache-batch-hit-rate", *f.batchHit}, {"--cache-cross-rate", *f.cross}} {
		if !(r.v >= 0 && r.v <= 1) {
			return cachesim.Config{}, fmt.Errorf("%s %v is not a probability from 0 to 1", r.name, r.v)
		}
	}
	if *f.minTokens < 0 {
		return cachesim.Config{}, fmt.Errorf("--cache-min-tokens %d is negative", *f.minTokens)
	}
	return cachesim.Config{SyncHitRate: *f.syncHit, BatchHitRate: *f.batchHit, CrossRate: *f.cross, MinTokens: *f.minTokens}, nil
}
