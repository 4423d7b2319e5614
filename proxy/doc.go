// Package proxy speaks the Anthropic HTTP API in front of a
// llmfleet.Submitter, so that existing clients get batching without code
// changes. It has two faces, which share one routing and one
// event-stream-synthesis code path:
//
//   - Server.Handler, the transparent HTTP proxy behind `llmfleet serve`;
//   - Server.SDK, the router behind the SDK middlewares (packages
//     middleware/anthropicmw and middleware/openaimw), in process.
//
// # Proxy
//
// POST /v1/messages is routed by latency budget. The budget comes from the
// header llmfleet-latency-budget-ms (integer milliseconds), or, for clients
// that can only set a base URL, from a path prefix: /budget/<ms>/v1/messages
// (ANTHROPIC_BASE_URL=http://127.0.0.1:8787/budget/600000); every other
// path works under the prefix too. The header wins over the prefix. A
// request with no budget gets Server.DefaultBudget, by default 0, and a
// budget of 0 always means the sync route. Otherwise the Submitter's Plan
// chooses. The header llmfleet-route: sync|batch forces a route, and
// llmfleet-deadline: hard makes the budget a hard deadline (see Latency
// budgets). Every /v1/messages response, errors included, carries
// llmfleet-route with the route taken (a request rejected before it could
// be routed reports sync); batched ones carry llmfleet-batch-id, sent as a
// trailer when a stream had to begin before the batch ended. No
// llmfleet-* header goes upstream. A malformed budget, route or deadline
// header (llmfleet-deadline takes "hard" only) is a 400
// invalid_request_error.
//
// The sync route and every other /v1/ path go upstream through
// httputil.ReverseProxy: bodies stream both ways, server-sent events are
// flushed as they arrive, connections are pooled (an http.Transport,
// unless Server.Transport is set). The proxy does not read
// the body of a sync request without a budget; one with a budget is read
// whole first (at most 32 MB, else 413 request_too_large), for routing
// and so that it can be sent again (see Latency budgets), and then handed
// on as read.
//
// The batch route checks the body first (a JSON object with a string
// model, an integer max_tokens ≥ 1 and a non-empty messages array, at most
// 32 MB) and answers 400 invalid_request_error or 413 request_too_large at
// once. It removes "stream" without re-encoding anything else, passes the
// anthropic-* headers along with the request, and waits. A non-streaming
// caller gets the Message exactly as the batch returned it. A streaming
// caller gets an event stream synthesised from the Message, in the API's
// event order and shapes. While it waits it gets a ping event every
// PingInterval; the 200 status goes out with the first ping.
//
// # Parked callers
//
// A non-streaming batched caller waits without a goroutine of its own
// when it can: if the Submitter is a llmfleet.FuncSubmitter (as
// dispatch.Dispatcher is), the request came over HTTP/1.1 and its body has
// been read, the proxy takes the connection over from net/http
// (http.ResponseController.Hijack), which frees the goroutine serving it
// and the connection's buffers, and hands the request to
// SubmitBatchFunc. When the answer comes, the proxy writes the complete
// response itself on the connection, with the same status, headers and
// body as otherwise plus Connection: close, and closes the connection
// (the client's next request opens a new one). A parked caller then
// holds a few KB of heap: its request, the Submitter's record of it and
// the connection (see "llmfleet-bench park" in docs/benchmarks.md).
//
// The access log line (Server.Access) of such a call is reported when its
// answer has been written; its latency runs to then. A caller that leaves
// while parked is not noticed: its request goes on, the write of its
// answer fails, and the answer stays readable by its ticket (with a
// durable Submitter). http.Server.Shutdown does not see these
// connections: at shutdown, close the Submitter (which answers every
// caller), then call Server.Drain, which waits for the answers to be
// written and closes what is left when its context ends.
//
// Other callers wait as before, each in the goroutine net/http serves it
// with: streaming callers (which get pings), HTTP/2, a ResponseWriter
// that cannot hand its connection over (the SDK middleware, a recorder),
// a Submitter without SubmitBatchFunc. A connection on which the client
// has already sent more (a pipelined request) is taken over but waits in
// its goroutine; its answer closes it and the pipelined request is left
// unanswered, which a pipelining client must be ready for (RFC 9112,
// section 9.3.2).
//
// # Latency budgets
//
// A request's budget counts from its arrival at the proxy (once its
// headers are read), on Server.Clock, whichever route it takes; reading
// and checking its body uses it up too.
//
// The budget routes; it does not kill. A sync call (or, on the OpenAI
// face, a flex call) already sent is not cut when its budget runs out:
// the upstream bills it whether or not its answer is waited for, and the
// answer is usually a moment away. It is answered when the upstream
// answers, late, and counted a budget miss (its ledger entry's BudgetMet
// false). A call whose budget was spent before it could be sent (a body
// slow to arrive) is sent all the same.
//
// A caller who wants a hard deadline asks for one with the header
// llmfleet-deadline: hard. Its sync or flex call then waits for the
// upstream's response headers only until the budget runs out; then the
// upstream call is canceled and the caller gets 504 with the face's
// envelope, error type timeout_error, and x-should-retry: false; a budget
// spent before the call could be sent is answered so at once, without
// going upstream. On the batch route the header changes nothing: its
// caller is answered at its budget either way (see below).
//
// Server.UpstreamTimeout (serve's --upstream-timeout, 10 minutes by
// default, as the SDKs wait) bounds every sync or flex call, with a
// budget or without: a call whose response headers have not come by then
// is canceled and answered 504 timeout_error in the face's envelope,
// saying the upstream did not answer within the upstream timeout.
//
// Once the response headers have come, the answer is under way and
// nothing cuts it, however long its body or stream takes: a stream whose
// first event came is passed on to its end, and an error event inside it
// is passed on as it comes.
//
// Before that, an upstream 429, 529 or other error of type
// overloaded_error is waited out and the request sent again, with the
// same body, if its retry-after-ms or retry-after header (seconds or an
// HTTP date) asks for a wait that leaves at least 500 ms of the budget
// and it does not say x-should-retry: false; a request is sent again at
// most 3 times, each wait checked against what is left. Any other answer,
// or one whose wait does not fit, is passed back unchanged. A retried
// call is one ledger entry; each error answer it got counts in
// UpstreamError.
//
// These waits are llmfleet's own, so the budget bounds them. A request
// without a budget (0) is never retried: the client's SDK retries it
// itself, as it would without the proxy.
//
// On the batch route, the Submitter gets what is left of the budget when
// the request is handed to it, and starts its own timer with that; a
// budget spent by then (a body slow to arrive) is answered 504
// timeout_error at once. An async request's budget, which only pulls its
// pool's flush forward, is likewise what is left.
//
// # Request ids and async requests
//
// Every batched response, errors and streams included, carries
// llmfleet-request-id: llmfleet's id of the request ("lfr_..."), chosen by
// the proxy before the request is handed on, so that a stream sends it
// with its first headers. When the Submitter keeps durable state (it
// implements llmfleet.Tickets, as a dispatch.Dispatcher with a Store
// does), GET /llmfleet/v1/requests/{id} reads the request again, so a
// caller whose connection dropped can fetch its answer later:
//
//	202 {"id":"lfr_...","type":"llmfleet_request","status":"queued"}     still pooled
//	202 {"id":"lfr_...","type":"llmfleet_request","status":"submitted"}  its batch is upstream
//	the status and body the synchronous call answered (or would have):
//	200 with the Message, or the error status and envelope
//
// (a request made through the OpenAI face is answered in OpenAI's shapes:
// see OpenAI face).
//
// Only the credential that sent a request can read it; any other gets 404
// not_found_error, as for an id that does not exist; no credential gets
// 401. In proxy-held-key mode, where clients share one upstream
// credential, a request is also bound to the key its client presented
// (kept as a fingerprint), so clients cannot read each other's requests.
// The path works under the /budget/<ms>/ prefix too.
//
// POST /v1/messages with the header Prefer: respond-async (RFC 7240;
// other preferences in the header are ignored) takes the batch route
// whatever its budget and does not wait: once the request is durably
// accepted it answers 202 with the ticket above (status "queued"),
// Location: /llmfleet/v1/requests/{id}, llmfleet-request-id and
// Preference-Applied: respond-async. The body is checked as on the batch
// route (400, 413). A streaming request asked async is accepted with
// "stream" removed: its stored answer is the Message as JSON. A latency
// budget, if given, still pulls its pool's flush forward, but nothing
// fails when it runs out. Prefer: respond-async with llmfleet-route: sync,
// or to a Submitter that keeps no durable state, is a 400
// invalid_request_error.
//
// The id goes out with a stream's headers at its first ping, possibly a
// moment before the request is durably accepted; a GET that early gets
// 404.
//
// # Idempotent retries
//
// A batched POST /v1/messages with an Idempotency-Key header (1 to 255
// visible ASCII characters) gets a request id derived from the key and
// the client's key name (Server.Fingerprint), so that the same key from
// the same client names the same request. The dispatcher never accepts a
// request id twice: a retry attaches to the request accepted before (in
// this process, or recovered after a restart) or is answered from its
// stored result, and a Prefer: respond-async call gets the same ticket.
// The same key with another body is a 400 invalid_request_error. The sync
// route stores nothing, so the header changes nothing there.
//
// # Errors
//
// A batched request that errored is answered with the status and error
// envelope the sync API would have sent, or, once its stream has begun,
// with an error event carrying the envelope. llmfleet's own errors map as
// the proxy maps them:
//
//	llmfleet.ErrBudgetExceeded      504 timeout_error, x-should-retry: false
//	llmfleet.ErrUpstreamTimeout     504 timeout_error (a sync call the
//	                                Submitter made for the request was not
//	                                answered within its upstream timeout)
//	llmfleet.ErrBatchExpired        529 overloaded_error
//	llmfleet.ErrClosed              529 overloaded_error (shutting down)
//	llmfleet.ErrBatchCanceled       500 api_error
//	llmfleet.ErrResultMissing       500 api_error
//	llmfleet.ErrStore               503 api_error, Retry-After: 3 (llmfleet's
//	                                database failed; nothing went upstream)
//	any other failure               502 api_error
//
// The proxy's own refusals: a call with a latency budget or a forced
// batch route that carries no x-api-key or Authorization is a 401
// authentication_error, a forced batch route with no Submitter is a
// 503 api_error, an unreachable upstream a 502 api_error, an unknown path
// outside /v1/ a 404 not_found_error, a malformed llmfleet-* header a 400
// invalid_request_error. A 504 timeout_error answers a call with a hard
// deadline (llmfleet-deadline: hard) that ran out before the upstream
// answered, and a batched request whose budget ran out before it could be
// queued, both with x-should-retry: false; and a call the upstream did
// not answer within Server.UpstreamTimeout (--upstream-timeout), which a
// retry may see answered.
//
// A request whose path has a dot segment, "." or "..", is refused with
// 400 invalid_request_error before anything looks at its path, on every
// path and in every mode: whether the segment comes as is, percent-encoded
// (%2e, %2E, also encoded again: %252e), or appears only once an encoded
// slash or backslash (%2f, %5c) or a backslash is read as a separator,
// and also as a segment with ";" parameters ("..;x"). A server behind the
// proxy could resolve such a path to another resource than the one the
// proxy checked (a path under /v1/models/ reaching a batch or a file). On
// the OpenAI face the answer is in OpenAI's envelope, with code
// invalid_path. No path of either API has a dot segment.
//
// # Credentials
//
// By default the client's own x-api-key or Authorization header goes
// upstream, and batches are pooled per credential, so that two keys never
// share a batch. With Server.Credentials set (for instance to
// ClientKeys.Map), the proxy holds the upstream credential itself and
// admits clients by keys of their own; an unknown key gets 401
// authentication_error. A key is the same credential whether it comes as
// x-api-key or as a bearer token: a ticket made with one is read with the
// other, in both modes.
//
// In proxy-held-key mode every client's batch made through the
// pass-through Message Batches API (/v1/messages/batches...) is made under
// the one upstream credential, so the proxy keeps ownership itself, in
// Server.BatchOwners: a create that succeeds records the batch as the
// client's (named by Server.Fingerprint of its key) before it is
// answered; a retrieve, results, cancel or delete of a batch the client
// did not create (including the dispatcher's own batches, which belong to
// no client) is a 404 not_found_error without reaching upstream; a list
// shows only the client's batches, following upstream pages (at most 10,
// of 1,000 batches each) until it has the client's limit or the list
// ends, with first_id and last_id those of the page answered; a cursor
// (after_id, before_id) must be one of the client's batches. Without
// Credentials the client's own key goes upstream and the API itself keeps
// each key's batches apart.
//
// Every create-message call names its client for spend attribution: the
// sync route's ledger entries and the Requests given to the Submitter
// carry the name Server.ClientName gives (ClientKeys.Name: the configured
// name), else the key label Server.Fingerprint gives, never the key.
//
// # OpenAI face
//
// Under /openai (OPENAI_BASE_URL=http://HOST:PORT/openai/v1, or
// .../budget/<ms>/openai/v1) the proxy speaks the OpenAI API: POST
// /openai/v1/chat/completions, /responses and /embeddings are routed by
// budget (sync, flex or batch; llmfleet-route: sync|flex|batch forces
// one), every other path passes through to Server.OpenAIUpstream. Its
// errors are in OpenAI's envelope {"error":{"message","type","param",
// "code"}}. Its sync and flex calls keep the budgets' rules above: not
// cut by the budget unless llmfleet-deadline: hard, cut by the upstream
// timeout; a flex call's attempts are the engine's (the Submitter, a
// llmfleet.FlexExecutor; without one, a single attempt): one refused for
// capacity is retried only while the budget leaves room for the wait and
// a standard call after it, the reserve the engine routes with.
//
// In proxy-held-key mode (Server.OpenAICredentials) only reads of the
// models pass through under the shared key; files and batches made
// through the face are their client's (as Message Batches are), and so
// is every response the face hands a client from /v1/responses, sync,
// flex, streamed (recorded as its response.created event ends) or
// batched, recorded in Server.BatchOwners before the client can read its
// id. A /v1/responses call whose previous_response_id names a response
// that is not the client's is answered as the API answers an unknown
// one, without reaching upstream:
//
//	404 {"error":{"message":"Previous response with id 'resp_…' not found.",
//	     "type":"invalid_request_error","param":"previous_response_id",
//	     "code":"previous_response_not_found"}}
//
// A conversation cannot be created through the proxy in this mode, so a
// call naming one (the conversation parameter, an id or an object) is
// refused likewise, with param conversation and code
// conversation_not_found.
//
// The face's batch route has what the Anthropic face's has (see Request
// ids and async requests, Idempotent retries): a batched call carries
// llmfleet-request-id from its first headers; Idempotency-Key on a
// routed call names its request by the key and the client's key name, so
// that a retry attaches to the request accepted before (the same key with
// another body, or a malformed key, is a 400 invalid_request_error with
// code idempotency_key_reused or invalid_idempotency_key); Prefer:
// respond-async takes the batch route and answers 202 with the ticket,
// Location: /llmfleet/v1/requests/{id}, llmfleet-request-id and
// Preference-Applied: respond-async (a stream asked async is stored as
// the endpoint's JSON; with llmfleet-route sync or flex, or without
// durable state, a 400). The ticket of an OpenAI-face request answers
// in OpenAI's shapes: the endpoint's body, or the error in OpenAI's
// envelope with the status the endpoint would have answered. It is also
// at GET /openai/v1/llmfleet/requests/{id}, under the face's base URL,
// whose refusals (401, 404) are in OpenAI's envelope too. Ownership is as
// for the Anthropic face's tickets: only the credential (in
// proxy-held-key mode, the client key) that sent a request reads it.
//
// # Tool loops
//
// With Server.ToolResultsSync set (off by default), a turn whose last user
// message carries tool_result blocks goes to the sync route whatever its
// budget, so an agent in the middle of a tool loop is not slowed down; a
// forced route still wins.
//
// # Cost ledger
//
// The batch route goes through the Submitter, which reports its ledger
// entries itself (dispatch.Dispatcher.Observe). The sync route does not,
// so the proxy reports it: with Server.Observe set, every sync
// create-message call gives one llmfleet.LedgerEntry (route sync, model,
// usage, outcome, latency, budget and whether it was met), read off the
// response as it streams through: the Message's usage, or a stream's
// message_start usage updated by the cumulative usage of message_delta.
// Nothing is buffered: only the usage, model and error members are kept.
// To read them, the proxy asks upstream for an uncompressed body (the
// transport still compresses between the proxy and upstream) and a caller
// gets the body uncompressed. Server.UpstreamError counts the sync
// route's failed upstream calls: error answers, error events in a stream,
// unreachable upstreams and streams that broke off.
//
// Every call the upstream may bill is in the ledger: a call cut by its
// hard deadline or the upstream timeout (outcome timeout_error) or left
// by its caller (caller_canceled) has an entry too, budget not met, with
// the usage read off its answer so far if any, else an estimate flagged
// LedgerEntry.Estimated: input tokens a quarter of its body's bytes, no
// output. The OpenAI face records its sync and flex calls alike.
//
// # SDK middleware
//
// The SDK middlewares are in packages of their own, middleware/anthropicmw
// and middleware/openaimw, over the Server's SDKRouter:
//
//	srv := &proxy.Server{Submitter: dispatcher}
//	client := anthropic.NewClient(option.WithMiddleware(anthropicmw.New(srv)))
//	ctx = llmfleet.WithBudget(ctx, 10*time.Minute)
//	msg, err := client.Messages.New(ctx, params)          // may be batched
//	stream := client.Messages.NewStreaming(ctx, params)   // likewise
//
// Calls whose context carries no budget take Server.DefaultBudget (0, the
// default: they go through unchanged, apart from llmfleet-route). Calls
// routed sync go through the SDK's own HTTP client: the proxy's retries
// and Server.UpstreamTimeout do not apply to them; the context, the SDK's
// timeout and its retries do. Their budget does not cut them, unless the
// call asks for a hard deadline (option.WithHeader("llmfleet-deadline",
// "hard")): it is then answered 504 timeout_error when its budget runs
// out.
package proxy
