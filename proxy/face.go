package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file names what one provider API adds to the routed-call pipeline
// (pipeline.go): a face. The pipeline plans a call (headers, credential,
// tickets, route, request id) and answers it (a ticket, a batched answer
// with the caller parked or streamed pings, or the sync route) once for
// every face; bodies are read and bounded for all by bodyBudget.read. A
// face supplies only what differs: how its calls are admitted, parsed and
// checked, its refusals in its own words and envelope, how its answers,
// failures, streams and stored answers are rendered, and its sync route.
// A face served under a prefix of its own adds its pass-through rules
// (mountedFace, mount.go). A new provider API is a new face, registered
// by its mount's line in Server.init and, for the tickets of its calls,
// a case of providerFace (TestMountThirdFace writes one).

// face is one provider API's part of the routed-call pipeline.
type face interface {
	// traits returns what the pipeline needs to know of the face as data.
	traits() faceTraits
	// admit checks the credential a call presents, before its body is read.
	admit(r *http.Request, c *call) *refusal
	// route reads and checks what the call needs to be routed (its body),
	// decides its route (force, if not "", is the one the call forces,
	// c.async a ticket's), and builds c.req for the Submitter.
	route(r *http.Request, c *call, force llmfleet.Route) *refusal
	// note records the planned call (refused with e, if not nil) for the
	// access log.
	note(r *http.Request, c *call, e *refusal)
	// refuse answers a refusal of the proxy's own, in the face's envelope.
	refuse(w http.ResponseWriter, e *refusal)
	// says returns the face's refusal of kind k; arg is the id or the
	// number the refusal names, if any.
	says(k refusalKind, arg string) *refusal
	// fail answers a batched call the Submitter failed with err; stored
	// says whether an answer the Submitter stored for the request is to be
	// given instead, so that reading it again gets the same bytes.
	fail(ctx context.Context, w http.ResponseWriter, c *call, err error, stored bool)
	// answer answers a batched call with its result.
	answer(ctx context.Context, w http.ResponseWriter, c *call, resp *llmfleet.Response)
	// endStream ends the stream of a streaming batched call with its result
	// (resp or err); begun says whether p has sent the stream's headers.
	endStream(ctx context.Context, p *streamPark, c *call, resp *llmfleet.Response, err error, begun bool)
	// sync sends a call routed sync (or flex) upstream and passes its
	// answer on.
	sync(w http.ResponseWriter, r *http.Request, c *call)
	// stored answers a stored request of the face's provider that is done,
	// as its call would have been answered.
	stored(ctx context.Context, w http.ResponseWriter, sr *llmfleet.StoredRequest)
}

// refusalKind names a refusal every face gives, each in its own words.
type refusalKind int

const (
	// stateFailed: the proxy could not read or write its state (500).
	stateFailed refusalKind = iota
	// ticketState: the proxy could not read a ticket (500).
	ticketState
	// unreadable: the upstream's answer could not be read (502).
	unreadable
	// badLimit: a list's limit is out of 1 to arg.
	badLimit
	// bothCursors: a list was given cursors in both directions.
	bothCursors
	// badCursor: a list's cursor arg is not one of the client's.
	badCursor
	// batchNotFound, fileNotFound: the client has no batch, no file arg.
	batchNotFound
	fileNotFound
	// ticketNotFound: the credential has no request arg.
	ticketNotFound
	// unknownKey: proxy-held keys, and the key presented is unknown.
	unknownKey
	// noKey: the call presents no key.
	noKey
	// notRecorded: the owner of arg, made upstream, was not recorded (500).
	notRecorded
	// unknownPath: the face has no path arg ("METHOD /path", 404).
	unknownPath
	// faceClosed: proxy-held keys, and the face holds none (403).
	faceClosed
	// notShared: arg ("METHOD /path") would reach what other clients made
	// under the key they share (403).
	notShared
	// spendLimit: the client has reached a spend limit; arg says which
	// and when it resets (429, clientrules.go).
	spendLimit
	// zdrBatch: a zero-data-retention client asked for the batch route
	// (400, clientrules.go); arg names the client.
	zdrBatch
	// objectNotFound: proxy-held keys, and a call names an object arg
	// ("container \"id\"") that is not the client's (404, heldrefs.go).
	objectNotFound
)

// faceTraits is what the pipeline knows of a face as data.
type faceTraits struct {
	// routes are the routes the llmfleet-route header may force ("" for
	// none: an array, so that traits are a value of their own).
	routes [3]llmfleet.Route
	// bare says whether refusals of the call's headers go out without the
	// llmfleet-route header.
	bare bool
	// parks says whether a non-streaming batched caller may be parked on
	// its connection alone (pipeline.park).
	parks bool
	// spent says whether a batched call whose budget is spent before it is
	// queued is answered 504 at once, rather than handed to the Submitter
	// with what is left of it.
	spent bool
	// stream is the shape of a streaming batched call's wait.
	stream streamShape
	// key is how the face's API carries a client's credential.
	key keyWay
	// billed reports whether a pass-through call of method to path makes
	// something the upstream bills (a batch, embeddings), and whether it
	// is a batch: with proxy-held keys it is held to the client's spend
	// limits as a routed call is (passLimit). Nil: none does.
	billed func(method, path string) (billed, batch bool)
}

// refusal is an answer a face gives itself: its status, error type, code,
// parameter and message, rendered in the face's envelope (the Anthropic
// one has no code nor parameter).
type refusal struct {
	status                int
	typ, code, param, msg string
	// bare sends the refusal without the llmfleet-route header.
	bare bool
	// noRetry tells the caller not to retry the call as it is.
	noRetry bool
	// closes closes the connection after the refusal (Anthropic face): the
	// body was left unread.
	closes bool
	// retryAfter, if above 0, is sent as Retry-After (spend limits).
	retryAfter time.Duration
}

// refusalOf is the refusal of an apiError.
func refusalOf(e *apiError) *refusal {
	return &refusal{status: e.status, typ: e.typ, msg: e.msg, closes: e == bodyTooSlow || e == bodiesFull}
}

// call is a routed call of any face, once planned.
type call struct {
	route llmfleet.Route
	// forced reports whether the route was forced (llmfleet-route).
	forced bool
	budget time.Duration
	// arrived is when the proxy got the request: its budget counts from
	// then.
	arrived time.Time
	// cred is the upstream credential, set when it differs from the one
	// the client presented (proxy-held-key mode; Anthropic face).
	cred *llmfleet.Credential
	// body is the request body, nil if routing did not need to read it
	// (Anthropic face; the OpenAI face's is in req).
	body []byte
	// req is the Request for the Submitter.
	req *llmfleet.Request
	// stream reports whether the caller asked for a stream.
	stream bool
	// idempotencyKey is the caller's Idempotency-Key, if any.
	idempotencyKey string
	// async reports whether the caller asked for a ticket at once
	// (Prefer: respond-async) rather than for the answer.
	async bool
	// hard reports whether the budget is a hard deadline (HeaderDeadline).
	hard bool
	// client names the caller in the ledger (see clientOf).
	client    *clientName
	ownClient clientName // what client points to, unless the access record's

	// endpoint is the OpenAI endpoint called (/v1/chat/completions, ...).
	endpoint string
	// model is the model an OpenAI call names.
	model string
	// includeUsage is an OpenAI chat stream's stream_options.include_usage.
	includeUsage bool
	// noBatch and batchOnly keep the call off the batch route, or take it
	// only there (clientrules.go); reason says why (HeaderRouteReason),
	// and rule is the limit a call taken only batched is over.
	noBatch, batchOnly bool
	reason             string
	rule               *clientRule

	// owner, in proxy-held-key mode, names the client of a /v1/responses
	// call, whose answer's response is recorded as its own (see
	// openai_responses.go).
	owner string
	// span is the call's span (trace.go); nil when not traced.
	span *callSpan
	// rescued says a flex attempt of the call was given up for the
	// standard tier after it went upstream (a rescue: see
	// syncObserver.givenUp).
	rescued bool
}

// openAICall is a routed call of the OpenAI face.
type openAICall = call

// remaining returns what is left of c's budget at now, counted from the
// request's arrival; it is 0 or less once the budget is spent.
func (c *call) remaining(now time.Time) time.Duration {
	return c.budget - now.Sub(c.arrived)
}

// hardLeft returns what c's hard deadline (llmfleet-deadline: hard)
// leaves of its budget at now, 0 for a call without one; spent tells that
// the deadline has passed: the call is cut before it is sent.
func (c *call) hardLeft(now time.Time) (left time.Duration, spent bool) {
	if !c.hard || c.budget <= 0 {
		return 0, false
	}
	left = c.remaining(now)
	return left, left <= 0
}
