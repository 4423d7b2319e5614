package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// DefaultUpstream is the Anthropic API, the upstream of a Server whose
// Upstream is nil.
const DefaultUpstream = "https://api.anthropic.com"

// DefaultPingInterval is the interval between ping events on a parked
// streaming request when Server.PingInterval is 0.
const DefaultPingInterval = 10 * time.Second

// Header names of the proxy's own protocol. They are never sent upstream.
const (
	// HeaderBudget carries a request's latency budget in integer milliseconds.
	HeaderBudget = "Llmfleet-Latency-Budget-Ms"
	// HeaderRoute forces a route ("sync" or "batch") on a request, and tells
	// on every /v1/messages response which route it took.
	HeaderRoute = "Llmfleet-Route"
	// HeaderBatchID names the provider batch that answered a batched request.
	HeaderBatchID = "Llmfleet-Batch-Id"
	// HeaderRequestID carries llmfleet's id of a batched request ("lfr_..."),
	// by which its answer can be read again at RequestsPath + id.
	HeaderRequestID = "Llmfleet-Request-Id"
)

// Server is the transparent proxy: it speaks the Anthropic HTTP API, routes
// POST /v1/messages by latency budget through a Submitter and passes every
// other /v1/ path upstream unchanged. Its zero value is a plain reverse proxy
// to the Anthropic API; set Submitter to route. A Server must not be copied
// or have its fields changed once Handler or SDK has been called.
type Server struct {
	// Submitter routes and batches create-message calls. If nil, every
	// request goes to the sync route and a forced batch route is refused.
	Submitter llmfleet.Submitter

	// Upstream is the base URL of the Anthropic API; nil means
	// DefaultUpstream. The sync route and the pass-through paths go there.
	Upstream *url.URL

	// Transport makes the upstream calls of the sync route and the
	// pass-through paths. Nil means a pooled clone of
	// http.DefaultTransport, shared by the Server's handlers.
	Transport http.RoundTripper

	// Provider is the provider name put on the Requests given to the
	// Submitter; empty means the Submitter's default provider.
	Provider string

	// DefaultBudget is the latency budget of a request that carries none.
	// Zero (the default) sends such requests to the sync route: an unmarked
	// request is never made slow. A positive one routes those that go
	// sync as any budget does, without cutting them (see the package doc).
	DefaultBudget time.Duration

	// ToolResultsSync, if set, sends to the sync route every turn whose last
	// user message carries tool_result blocks (an agent in the middle of a
	// tool loop), whatever its budget, unless the route is forced.
	ToolResultsSync bool

	// Credentials, if set, puts the proxy in proxy-held-key mode: it is
	// called with the credential a client presented (x-api-key or bearer
	// token) and returns the credential to send upstream; ok false answers
	// 401 authentication_error. ClientKeys.Map is such a hook. If nil, the
	// client's own credential goes upstream. Batching pools are per
	// upstream credential.
	Credentials func(presented llmfleet.Credential) (upstream llmfleet.Credential, ok bool)

	// OpenAICredentials is the Credentials hook of the OpenAI face in
	// proxy-held-key mode (ClientKeys.MapOpenAI is one): the client's
	// Authorization: Bearer key is replaced by the OpenAI key it returns,
	// ok false answers 401. Files, batches and responses made through the
	// face are then owned by their client, as Message Batches are
	// (BatchOwners), and a response may be continued from
	// (previous_response_id) only by its client.
	// Nil, with Credentials set, closes the OpenAI face (403
	// permission_error); without Credentials it is unused.
	OpenAICredentials func(presented llmfleet.Credential) (upstream llmfleet.Credential, ok bool)

	// Fingerprint, in proxy-held-key mode, names the client key a batched
	// request or a batch made through the Batches API was sent with, so
	// that only that key may read it later; a key is named alike whether
	// it came as x-api-key or as a bearer token. Give it a hash keyed with
	// the instance secret (the Sealer's Fingerprint), so that the stored
	// name reveals nothing of the key; it is also the label to log a key
	// by, and the key label that names a client in the cost ledger (see
	// ClientName). Nil means Credential.Fingerprint(nil), whose key is
	// public: fine for access checks, not for logs. It must name a key
	// alike every time: the names of recent keys are remembered.
	Fingerprint func(llmfleet.Credential) string

	// ClientRules, if set, says what a client's spend limits and data
	// rules allow its next routed call, the client named as its ledger
	// entries name it (ClientName, else its key label); the Check method
	// of a ledger.Spend fits. A client over a limit is refused 429 in the
	// face's envelope (naming the limit and when it resets) or, if its
	// Verdict says BatchOnly, taken only on the batch route (429 when its
	// budget cannot be met by a batch); a ZDR client's calls are never
	// batched (400 for one asking for the batch route). The response
	// says why in HeaderRouteReason.
	ClientRules func(ctx context.Context, client string) ledger.Verdict

	// ClientName, if set, names the client presenting a credential for
	// the cost ledger (LedgerEntry.Client, Request.Client), e.g.
	// ClientKeys.Name in proxy-held-key mode; "" (or nil) names it by its
	// key label, the Fingerprint of the credential, never the key.
	ClientName func(presented llmfleet.Credential) string

	// BatchOwners, in proxy-held-key mode, keeps which client created
	// which batch through the pass-through Message Batches API, so that a
	// client lists, reads, cancels and deletes only its own (see the
	// package doc), and, on the OpenAI face, which client owns each file,
	// batch and response. Give it a durable store (the sqlite DB); nil keeps
	// owners in memory, lost at restart. Unused without Credentials.
	BatchOwners BatchOwners

	// PingInterval is the interval between ping events sent to a streaming
	// caller while its batched request waits; 0 means DefaultPingInterval.
	// The response status and headers go out with the first ping, so a
	// result arriving before it is answered exactly as the sync API would.
	PingInterval time.Duration

	// Clock times the pings, the latency budgets (their start at a
	// request's arrival, a hard deadline, the sync route's retry waits)
	// and the upstream timeout; nil means the real clock.
	Clock llmfleet.Clock

	// Logger receives one debug line per routed request and warnings for
	// upstream failures; nil discards. Credentials are never logged.
	Logger *slog.Logger

	// Observe, if set, is called once for every create-message call of the
	// sync route, which goes upstream through the reverse proxy rather than
	// the Submitter, with its ledger entry (costs not filled in): model,
	// usage, outcome ("ok" or the error type; "timeout_error" for a call
	// cut by its hard deadline or the upstream timeout, "caller_canceled"
	// for one its caller left), latency (from the request's arrival) and
	// budget. A cut call whose usage was not read has it estimated
	// (LedgerEntry.Estimated): the upstream may bill it. A call retried
	// within its budget is one entry. The
	// usage is read off the response as it streams to the caller (the
	// Message's usage, or message_start's updated by message_delta's),
	// without holding it. Observe is called when the response has been
	// passed on in full or the call failed, from the goroutine serving the
	// request: it must be quick and safe for concurrent use.
	Observe func(llmfleet.LedgerEntry)

	// UpstreamError, if set, is called for each failed upstream call of
	// the sync route with the kind of failure: the error type of an error
	// response or of an error event in a stream, "http_<status>" when the
	// type is unknown, "network" when the upstream was unreachable or the
	// response broke off. An error answer retried within the budget
	// counts too; a call cut by its hard deadline or the upstream
	// timeout is no upstream failure.
	UpstreamError func(kind string)

	// Access, if set, is called once for every request the Handler
	// serves (GET /healthz aside) when its answer has ended: the
	// access log. For POST /v1/messages it says the route, model,
	// budget and request id; credentials appear only as their
	// Fingerprint. It is called from the goroutine serving the request,
	// or, for a caller parked on its connection (see the package doc),
	// from the one writing its answer.
	Access func(Access)

	// OpenAIUpstream is the base URL of the OpenAI API, the upstream of
	// the OpenAI face (/openai/v1/...); nil means DefaultOpenAIUpstream.
	OpenAIUpstream *url.URL

	// GeminiUpstream is the base URL of the Gemini API (without the
	// version), the upstream of the Gemini face (/gemini/v1beta/...); nil
	// means DefaultGeminiUpstream.
	GeminiUpstream *url.URL

	// GeminiCredentials is the Credentials hook of the Gemini face in
	// proxy-held-key mode: the client's key (x-goog-api-key or ?key=) is
	// replaced by the Gemini key it returns, ok false answers 400
	// INVALID_ARGUMENT as the API does an invalid key. Batches and files
	// made through the face are then owned by their client. Nil, with
	// Credentials set, closes the Gemini face (403 PERMISSION_DENIED);
	// without Credentials it is unused.
	GeminiCredentials func(presented llmfleet.Credential) (upstream llmfleet.Credential, ok bool)

	// UpstreamTimeout bounds the wait for the upstream's answer to a
	// routed sync or flex call, whatever its budget: a call whose
	// response headers have not come by then is cut and answered 504
	// timeout_error, in the face's envelope. 0 means
	// DefaultUpstreamTimeout, negative none. An answer that has begun is
	// not cut, however long it streams. The SDK middlewares leave it to
	// the SDK's own timeout.
	UpstreamTimeout time.Duration

	// TierTimeout, if set, returns the upstream timeout a provider
	// ("gemini") states for a tier (llmfleet.TierTimeouts; 0: none of its
	// own): a call of the Gemini face in that tier is bounded by the
	// longer of it and UpstreamTimeout (Gemini's flex tier serves within
	// 15 minutes). Nil: UpstreamTimeout for every call.
	TierTimeout func(provider string, tier llmfleet.Tier) time.Duration

	// BodyReadTimeout bounds the time a client takes to send a request
	// body, from the end of its headers: a body not received in time is
	// answered 408 timeout_error and its connection closed. 0 means
	// DefaultBodyReadTimeout, negative none. It does not bound the answer,
	// however long it streams.
	BodyReadTimeout time.Duration

	// MaxBodyBytesInFlight bounds the bytes held, across all connections,
	// in request bodies the proxy reads whole (routed calls) before it has
	// all of them; a body that would go over is answered 529
	// overloaded_error, which SDKs retry after a back-off. 0 means
	// DefaultMaxBodyBytesInFlight, negative none. Bodies passed upstream
	// as they come (the pass-through paths, sync calls without a budget)
	// hold only a copy buffer and are not counted.
	MaxBodyBytesInFlight int64

	// TracerProvider, if set, makes a span of every routed call (see
	// trace.go): a child of the caller's traceparent, with its route,
	// budget, model, usage and batch, carried in the context handed to
	// the Submitter. Nil: no spans.
	TracerProvider trace.TracerProvider

	// TracePrice, if set, prices the ledger entry of a sync or flex call
	// for its span's llmfleet.cost_usd (observe.Pipeline.Price fits).
	// The usage of a sync call is read for its span only while it is
	// observed (Observe set).
	TracePrice func(llmfleet.LedgerEntry) llmfleet.LedgerEntry

	once  sync.Once
	log   *slog.Logger
	clock llmfleet.Clock
	fwd   *forwarder // the upstream calls of every face (forward.go)
	// faces are the faces mounted, each under its prefix.
	faces []mountedFace
	mux   *http.ServeMux

	batchOwners     BatchOwners
	unrecorded      *unrecorded // what answers named whose owner could not be recorded
	bodyTimeout     time.Duration
	upstreamTimeout time.Duration

	bodies bodyBudget
	spans  spanTracer // the spans of routed calls (trace.go)
	parked parkedSet  // callers parked on their connections (parkconn.go)
	// keyNames remembers the Fingerprint of client keys (keynames.go).
	keyNames keyNames
}

// Handler returns the HTTP handler of the proxy:
//
//	GET  /healthz                      200 once the proxy serves
//	POST /v1/messages                  routed by latency budget; with
//	                                   Prefer: respond-async, 202 and a ticket
//	GET  /llmfleet/v1/requests/{id}    a batched request's answer, or 202 while pending
//	     /v1/...                       passed upstream unchanged, streaming included
//	     /openai/v1/...                the OpenAI face (chat/completions, responses and
//	                                   embeddings routed, the rest passed upstream)
//	GET  /openai/v1/llmfleet/requests/{id}  a ticket, refusals in OpenAI's envelope
//	     /gemini/v1beta/...            the Gemini face (generateContent and
//	                                   streamGenerateContent routed, the rest passed upstream)
//	GET  /gemini/v1beta/llmfleet/requests/{id}  a ticket, refusals in Google's envelope
//	     /budget/<ms>/<path>           <path> with a latency budget of <ms> milliseconds
func (s *Server) Handler() http.Handler {
	s.init()
	return http.HandlerFunc(s.serveHTTP)
}

// serveHTTP routes a request. Doubled slashes are folded first: a base URL
// given with a trailing slash (ANTHROPIC_BASE_URL=.../budget/600000/) makes
// clients ask for .../budget/600000//v1/messages, which ServeMux would
// otherwise answer with a redirect that not every client follows for a POST.
//
// The folding works on the escaped path, so that an escaped slash (%2F)
// next to a slash is neither folded nor turned into a slash.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if ep := r.URL.EscapedPath(); strings.Contains(ep, "//") {
		for strings.Contains(ep, "//") {
			ep = strings.ReplaceAll(ep, "//", "/")
		}
		p, err := url.PathUnescape(ep)
		if err != nil { // cannot be: ep is the escaped form of a path
			p = r.URL.Path
		}
		r = withPath(r, p, ep)
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/budget/"); ok && rest != "" && !strings.Contains(rest, "/") {
		// /budget/<ms> alone is the root under a budget, as /budget/<ms>/ is,
		// not a redirect to it.
		r = withPath(r, r.URL.Path+"/", "")
	}
	if s.Access != nil && r.URL.Path != "/healthz" {
		newAccessRec(s, r).serve(w, r, s.route)
		return
	}
	s.route(w, r)
}

// route serves a request once its path is folded: a path with a dot
// segment is refused (pathcheck.go), before anything decides by the path;
// CONNECT is refused, the body is put under its read deadline and the
// bytes-in-flight budget, and the mux routes the rest.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if s.refuseDotSegments(w, r) || s.refuseMethodOverride(w, r) {
		return
	}
	if r.Method == http.MethodConnect {
		w.Header().Set("Allow", allowedMethods)
		writeAPIError(w, &apiError{http.StatusMethodNotAllowed, "invalid_request_error", "Method CONNECT is not allowed: llmfleet is no forward proxy."})
		return
	}
	guardBody(w, r, s.bodyTimeout)
	s.mux.ServeHTTP(w, r)
}

// allowedMethods is the Allow header of a method the proxy refuses.
const allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

func (s *Server) init() {
	s.once.Do(func() {
		s.log = s.Logger
		if s.log == nil {
			s.log = slog.New(slog.DiscardHandler)
		}
		s.clock = s.Clock
		if s.clock == nil {
			s.clock = llmfleet.RealClock{}
		}
		s.batchOwners, s.unrecorded = s.BatchOwners, &unrecorded{}
		if s.batchOwners == nil {
			s.batchOwners = &memOwners{}
		}
		s.bodyTimeout = durationSetting(s.BodyReadTimeout, DefaultBodyReadTimeout)
		s.upstreamTimeout = durationSetting(s.UpstreamTimeout, DefaultUpstreamTimeout)
		s.bodies.max = s.MaxBodyBytesInFlight
		if s.bodies.max == 0 {
			s.bodies.max = DefaultMaxBodyBytesInFlight
		}
		s.spans = newSpanTracer(s)
		s.fwd = newForwarder(s)
		// The Anthropic face, at the root, first (Server.faceAt).
		s.faces = []mountedFace{anthropicFace{s: s}, openAIFace{s: s}, geminiFace{s: s}}
		for _, f := range s.faces {
			prefix, _ := f.prefix()
			s.fwd.mount(prefix, f.way(s.fwd))
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("ok\n"))
		})
		mux.HandleFunc("POST /v1/messages", pipeline{s, anthropicFace{s: s}}.serve)
		mux.HandleFunc("GET "+RequestsPath+"{id}", ticketDesk{s, anthropicFace{s: s}}.serve)
		mux.HandleFunc("GET "+OpenAIRequestsPath+"{id}", ticketDesk{s, openAIFace{s: s}}.serve)
		mux.HandleFunc("/v1/", mount{s, anthropicFace{s: s}}.serve)
		mux.HandleFunc(OpenAIPrefix+"/", mount{s, openAIFace{s: s}}.serve)
		mux.HandleFunc("GET "+GeminiRequestsPath+"{id}", ticketDesk{s, geminiFace{s: s}}.serve)
		mux.HandleFunc(GeminiPrefix+"/", mount{s, geminiFace{s: s}}.serve)
		handleMisdirected(mux) // calls made under a wrong base URL
		mux.HandleFunc("/budget/{ms}/{path...}", s.budgetPrefix(mux))
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeAPIError(w, &apiError{http.StatusNotFound, "not_found_error", "Not found: " + r.URL.Path})
		})
		s.mux = mux
	})
}
