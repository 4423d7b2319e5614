package emulator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
)

// Size limits of the Anthropic API.
const (
	// MaxMessageBytes is the largest body POST /v1/messages accepts (32 MB).
	MaxMessageBytes = 32 << 20
	// MaxBatchBytes is the largest body a batch create accepts (256 MB).
	MaxBatchBytes = 256 << 20
	// MaxBatchRequests is the most requests one batch may hold.
	MaxBatchRequests = 100000
)

// Server emulates the Anthropic Messages and Message Batches HTTP APIs. The
// zero value is ready to use; set the fields before the first request and do
// not change them afterwards. A Server is safe for concurrent use.
//
// Batch state is derived lazily from Clock on every request: there are no
// background goroutines, so a test that moves a manual clock forward sees
// batches end without waiting.
type Server struct {
	// Clock tells the time and times the waits of Latency, SyncLatency,
	// the [slow:] directive and Fault.Delay (through llmfleet.Sleep). Nil
	// means the real clock. Tests pass a manual clock and move it forward
	// to make batches end or expire.
	Clock llmfleet.Clock

	// Turnaround returns how long a batch of requests for model takes to
	// end, drawing randomness from r only. A batch ends Turnaround after its
	// creation, taking the longest over the distinct models it holds; a
	// batch whose turnaround exceeds 24h expires at 24h. Nil means a uniform
	// draw between 2s and 6s, for demos.
	Turnaround func(model string, r *rand.Rand) time.Duration

	// Seed seeds every random choice of the emulator (batch turnaround,
	// result order, stream chunking, ids), so that two Servers with the same
	// Seed given the same requests at the same clock times answer
	// identically.
	Seed int64

	// Logger receives one debug line per request (never an API key). Nil
	// means slog.Default().
	Logger *slog.Logger

	// Latency delays every synchronous POST /v1/messages reply. Zero means
	// no delay.
	Latency time.Duration

	// SyncLatency, if not nil, draws the delay of a synchronous POST
	// /v1/messages reply for its model instead of Latency, from r only (r
	// is seeded by Seed and the request body).
	SyncLatency func(model string, r *rand.Rand) time.Duration

	// Keys, if not empty, is the set of accepted API keys (sent as x-api-key
	// or as "Authorization: Bearer"). Empty means any non-empty key is
	// accepted.
	Keys []string

	// CancelDelay is how long a canceled batch stays "canceling" before it
	// ends; requests that finish within that time still succeed. Zero means
	// one second; a negative value means the batch ends at the moment of
	// the cancel (the cancel call itself still answers "canceling").
	CancelDelay time.Duration

	// CacheMinTokens is the shortest prefix, in tokens, that prompt caching
	// caches; shorter prefixes are silently left uncached, as the real API
	// does per model. Zero means no minimum.
	CacheMinTokens int

	// Cache, if not nil, sets the prompt cache's behaviour (see package
	// cachesim): the probability that a sync call reads what the sync
	// route cached (SyncHitRate), that a batch request reads what batch
	// requests cached (BatchHitRate: best effort on the real API), and
	// that either reads what the other route cached (CrossRate). Nil means
	// cachesim.Default(): 1, 1 and 0, the sync and batch caches apart.
	// CacheMinTokens, when not zero, overrides its MinTokens.
	Cache *cachesim.Config

	// Models are the model ids GET /v1/models lists and GET
	// /v1/models/{model_id} knows. Nil means the Anthropic models of the
	// default price table (pricing.Default). The messages endpoints serve
	// these, the aliases (of that table or of ModelIDs) that lead to them,
	// and TestModel; any
	// other model is refused with 404 not_found_error, as the real API
	// does (a batch request for it ends errored).
	Models []string

	// ModelIDs maps a model alias to the dated id the answers to it name,
	// as the real API does (a request of claude-haiku-4-5 is answered by
	// claude-haiku-4-5-20251001). Nil means the aliases of the default
	// price table; an empty map answers every model by the name asked
	// (aliases are still served).
	ModelIDs map[string]string

	// BatchRetryAfter is the Retry-After header a GET of a batch still
	// processing answers (the real API sends 10 seconds), in whole
	// seconds. Zero means 10s; a negative value sends none.
	BatchRetryAfter time.Duration

	once  sync.Once
	names *modelNames // set by init
	mu    sync.Mutex
	st    *state
	reqN  uint64 // request id counter, guarded by mu
	fault faultList
}

// state is everything the Server remembers, guarded by Server.mu.
type state struct {
	batchSeq int64
	batches  map[string]*batch   // by id, including deleted ones
	byKey    map[string][]*batch // by key fingerprint, in creation order
	pending  []*batch            // not yet settled
	landings []*landing          // late creates, by landing time
	cache    *cachesim.Cache
	stats    statsState
}

func (s *Server) init() {
	s.once.Do(func() {
		s.names = s.newModelNames()
		s.st = &state{
			batches: map[string]*batch{},
			byKey:   map[string][]*batch{},
			cache:   cachesim.New(s.cacheConfig()),
			stats:   newStatsState(),
		}
	})
}

func (s *Server) now() time.Time {
	return llmfleet.Now(s.Clock)
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) turnaround(model string, r *rand.Rand) time.Duration {
	if s.Turnaround != nil {
		return s.Turnaround(model, r)
	}
	return 2*time.Second + time.Duration(r.Int64N(int64(4*time.Second)))
}

// rng returns a deterministic random source for the given labels.
func (s *Server) rng(labels ...any) *rand.Rand {
	h := sha256.New()
	fmt.Fprintf(h, "seed=%d", s.Seed)
	for _, l := range labels {
		fmt.Fprintf(h, "|%v", l)
	}
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// newRequestID returns a fresh request id; the caller must not hold mu.
func (s *Server) newRequestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requestIDLocked()
}

// requestIDLocked returns a fresh request id; the caller holds mu.
func (s *Server) requestIDLocked() string {
	s.reqN++
	return "req_01" + idText(fmt.Sprintf("req|%d|%d", s.Seed, s.reqN))
}

// apiError is an error answered in the Anthropic error envelope.
type apiError struct {
	status    int
	typ       string
	message   string
	errorCode string // error.details.error_code, if any
}

func (e *apiError) Error() string { return e.typ + ": " + e.message }

func invalid(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "not_found_error", message: fmt.Sprintf(format, args...)}
}

// errorJSON is the inner error object of an envelope.
type errorJSON struct {
	Type    string       `json:"type"`
	Message string       `json:"message"`
	Details *detailsJSON `json:"details,omitempty"`
}

type detailsJSON struct {
	ErrorCode string `json:"error_code"`
}

func (e *apiError) inner() errorJSON {
	out := errorJSON{Type: e.typ, Message: e.message}
	if e.errorCode != "" {
		out.Details = &detailsJSON{ErrorCode: e.errorCode}
	}
	return out
}

// envelope is the JSON error envelope of the Anthropic API.
func envelope(e *apiError, requestID string) []byte {
	b, _ := json.Marshal(struct {
		Type      string    `json:"type"`
		Error     errorJSON `json:"error"`
		RequestID string    `json:"request_id"`
	}{"error", e.inner(), requestID})
	return b
}

func writeError(w http.ResponseWriter, e *apiError, requestID string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(envelope(e, requestID))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own types always marshal
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// call is one HTTP request being served.
type call struct {
	w        http.ResponseWriter
	r        *http.Request
	id       string // request id
	key      string // fingerprint of the API key
	endpoint string
}

// ServeHTTP serves the emulated API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	sw := &statusWriter{ResponseWriter: w}
	c := &call{w: sw, r: r, id: s.newRequestID()}
	sw.Header().Set("request-id", c.id)
	sw.Header().Set("anthropic-organization-id", "00000000-0000-4000-8000-000000000000")
	defer func() {
		s.logger().Debug("emulator request", "method", r.Method, "path", r.URL.Path,
			"endpoint", c.endpoint, "status", sw.status, "request_id", c.id)
	}()

	if r.URL.Path == StatsPath {
		c.endpoint = "stats"
		if r.Method != http.MethodGet {
			writeError(sw, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", message: "method not allowed"}, c.id)
			return
		}
		writeJSON(sw, http.StatusOK, s.Stats())
		return
	}

	rt, aerr := route(r.Method, r.URL.Path)
	c.endpoint = rt.endpoint
	s.count(rt)

	if f, ok := s.takeFault(r.Method, r.URL.Path, rt.endpoint, false); ok {
		if !s.applyFault(c, f, func() { s.serveRoute(c, rt, aerr) }) {
			return
		}
	}
	s.serveRoute(c, rt, aerr)
}

// serveRoute authenticates the call and runs its endpoint.
func (s *Server) serveRoute(c *call, rt routed, aerr *apiError) {
	if aerr != nil {
		writeError(c.w, aerr, c.id)
		return
	}
	if e := s.authenticate(c); e != nil {
		writeError(c.w, e, c.id)
		return
	}
	rt.handle(s, c)
}

// authenticate checks the API key and anthropic-version headers.
func (s *Server) authenticate(c *call) *apiError {
	key := c.r.Header.Get("x-api-key")
	header := "x-api-key"
	if key == "" {
		if a := c.r.Header.Get("Authorization"); a != "" {
			header = "authorization"
			if t, ok := strings.CutPrefix(a, "Bearer "); ok {
				key = strings.TrimSpace(t)
			}
			if key == "" {
				return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: "invalid authorization header: expected \"Bearer <token>\""}
			}
		}
	}
	if key == "" {
		return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: "x-api-key header is required"}
	}
	if len(s.Keys) > 0 {
		ok := false
		for _, k := range s.Keys {
			if k == key {
				ok = true
				break
			}
		}
		if !ok {
			return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: "invalid " + header}
		}
	}
	c.key = keyFingerprint(key)
	switch v := c.r.Header.Get("anthropic-version"); v {
	case "":
		return invalid("anthropic-version: header is required")
	case "2023-06-01", "2023-01-01", "2026-10-21":
	default:
		return invalid("anthropic-version: %q is not a valid version", v)
	}
	return nil
}

// keyFingerprint identifies an API key without keeping it.
func keyFingerprint(key string) string {
	sum := sha256.Sum256([]byte("llmfleet emulator key|" + key))
	return fmt.Sprintf("%x", sum[:12])
}

// readBody reads the request body, answering 413 when it exceeds limit.
func readBody(c *call, limit int64) ([]byte, *apiError) {
	b, err := io.ReadAll(io.LimitReader(c.r.Body, limit+1))
	if err != nil {
		return nil, invalid("could not read request body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, typ: "request_too_large",
			message: fmt.Sprintf("Request exceeds the maximum allowed number of bytes (%d).", limit)}
	}
	return b, nil
}

var errDropped = errors.New("connection dropped")
