// Package openai is llmfleet's adapter of the OpenAI API: an
// llmfleet.Provider whose synchronous calls go to the routed endpoints
// (chat completions, responses, embeddings; Request.Endpoint, by default
// /v1/chat/completions), in the standard tier or, for a Request with Flex
// set, in the flex tier (service_tier "flex").
//
// A flex call refused for lack of capacity (429 "resource unavailable",
// not billed) is an *llmfleet.Error matching llmfleet.ErrFlexUnavailable;
// one refused because the model has no flex tier (a 400 naming
// service_tier) matches llmfleet.ErrFlexUnsupported; the engine retries
// the first and learns from the second. A Response's Tier is the tier the
// answer says served it, which its cost follows.
//
// Batches go through the Batch API: the items are uploaded as a JSONL
// file (purpose batch, expiring after a week), the batch is created with
// the "24h" window and the metadata "llmfleet_tag" carrying llmfleet's
// tag, which FindBatch looks for; results are read from the output and
// error files and matched by custom_id. The upload and the create are
// retried within the create's context as CreateBatch describes: the
// upload after any failure that is no refusal, the create (not
// idempotent) only when refused or never written; a create that may have
// made the batch is an *llmfleet.UncertainError, which the engine settles
// with FindBatch. A batch that failed as a whole
// (status failed: validation errors, or token_limit_exceeded after its
// create) is ended with a Failure.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// DefaultBaseURL is the OpenAI API, without "/v1".
const DefaultBaseURL = "https://api.openai.com"

// Name is the provider's name.
const Name = "openai"

// Limits of one batch (provider-apis.md C.6).
const (
	MaxBatchRequests = 50_000
	MaxBatchBytes    = 200 << 20
)

// Provider is the OpenAI API as an llmfleet.Provider. Its zero value calls
// the real API with a pooled client of its own.
type Provider struct {
	// BaseURL is the API's base URL, without "/v1"; empty means
	// DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests; nil means a client with pooled
	// keep-alive connections and no overall timeout (the caller's context
	// bounds each call).
	HTTPClient *http.Client
	// MaxRetries is the number of retries of each call of a batch create
	// (see CreateBatch); 0 means DefaultMaxRetries, negative none.
	MaxRetries int
	// Clock tells the time (to read a retry-after given as a date) and
	// times the wait before a retry, through llmfleet.Sleep. Nil means the
	// real clock.
	Clock llmfleet.Clock
}

var _ llmfleet.Provider = (*Provider)(nil)

var defaultClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

func (p *Provider) client() *http.Client {
	if p.HTTPClient != nil {
		return p.HTTPClient
	}
	return defaultClient
}

func (p *Provider) base() string {
	if p.BaseURL == "" {
		return DefaultBaseURL
	}
	return strings.TrimSuffix(p.BaseURL, "/")
}

// Name returns "openai".
func (p *Provider) Name() string { return Name }

// Limits returns the Batch API's limits.
func (p *Provider) Limits() llmfleet.BatchLimits {
	return llmfleet.BatchLimits{MaxRequests: MaxBatchRequests, MaxBytes: MaxBatchBytes}
}

// endpoint returns the endpoint of req, checked.
func endpoint(req *llmfleet.Request) (string, error) {
	ep := req.Endpoint
	if ep == "" {
		ep = openaiwire.ChatCompletions
	}
	if !openaiwire.Routed(ep) {
		return "", fmt.Errorf("openai: %s is not an endpoint llmfleet routes", ep)
	}
	return ep, nil
}

// Send makes a non-streaming call of req's endpoint with its body, byte for
// byte but for service_tier "flex" when req.Flex is set, and the headers of
// req.Header but llmfleet's own (llmfleet-*). A 2xx answer is a
// Response with the answer's status, headers, body, usage, model and
// served tier; an error answer an *llmfleet.Error in the API's envelope.
func (p *Provider) Send(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	res, err := p.post(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("openai: reading the answer: %w", err)
	}
	resp := &llmfleet.Response{Route: llmfleet.RouteSync, StatusCode: res.StatusCode, Header: res.Header, Body: body}
	if a, err := openaiwire.ReadAnswer(body); err == nil {
		resp.Model, resp.Usage, resp.Tier, resp.Pending = a.Model, a.Usage, a.Tier, a.Queued()
	}
	return resp, nil
}

// Stream makes a streaming call of req's endpoint (its body should ask for
// "stream": true) and, once the API answers 2xx, returns the event stream,
// which the caller must close. An error answer, which comes before any
// event (a flex refusal included), is an *llmfleet.Error.
func (p *Provider) Stream(ctx context.Context, req *llmfleet.Request) (io.ReadCloser, error) {
	res, err := p.post(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// post sends req and returns a 2xx answer, or the error answer as an
// *llmfleet.Error.
func (p *Provider) post(ctx context.Context, req *llmfleet.Request, stream bool) (*http.Response, error) {
	ep, err := endpoint(req)
	if err != nil {
		return nil, err
	}
	body := []byte(req.Body)
	if req.Flex {
		if body, err = jsonmember.Set(body, "service_tier", []byte(`"flex"`)); err != nil {
			return nil, &llmfleet.Error{StatusCode: http.StatusBadRequest, Type: "invalid_request_error",
				Message: "The request body is not a JSON object.", Body: openaiwire.Envelope("invalid_request_error", "", "", "The request body is not a JSON object.")}
		}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base()+ep, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		if len(k) >= 9 && strings.EqualFold(k[:9], "llmfleet-") {
			continue // llmfleet's own (the proxy's client name): never upstream
		}
		hr.Header[k] = append([]string(nil), vs...)
	}
	hr.Header.Set("Content-Type", "application/json")
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	key := req.Credential.APIKey
	if key == "" {
		key = req.Credential.AuthToken
	}
	hr.Header.Set("Authorization", "Bearer "+key)
	res, err := p.client().Do(hr)
	if err != nil {
		return nil, fmt.Errorf("openai: %s: %w", ep, err)
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return nil, openaiwire.ErrorOf(res.StatusCode, b, res.Header.Get("X-Request-Id"))
}

// Inspect reads a request's model and pool key: requests share a batch
// only for one endpoint, model, organization and project (a batch file
// holds one model, a batch one endpoint, and both belong to an
// organization's project).
func (p *Provider) Inspect(req *llmfleet.Request) (llmfleet.RequestInfo, error) {
	ep, err := endpoint(req)
	if err != nil {
		return llmfleet.RequestInfo{}, err
	}
	var m struct {
		Model      string `json:"model"`
		Background bool   `json:"background"`
	}
	if err := json.Unmarshal(req.Body, &m); err != nil || m.Model == "" {
		return llmfleet.RequestInfo{}, errors.New("openai: the request names no model")
	}
	key := strings.Join([]string{ep, m.Model, req.Header.Get("OpenAI-Organization"), req.Header.Get("OpenAI-Project")}, "\x00")
	return llmfleet.RequestInfo{Model: m.Model, PoolKey: key, Unbatchable: m.Background}, nil
}

// BatchParams returns the body a request goes into a batch with: without
// stream, stream_options and service_tier (a batch has its own tier).
func (p *Provider) BatchParams(req *llmfleet.Request) (json.RawMessage, error) {
	b := []byte(req.Body)
	for _, k := range []string{"stream", "stream_options", "service_tier"} {
		var err error
		if b, err = jsonmember.Delete(b, k); err != nil {
			return nil, fmt.Errorf("openai: %w", err)
		}
	}
	return b, nil
}
