// Package gemini is llmfleet's adapter of the Gemini API
// (generativelanguage.googleapis.com): an llmfleet.Provider whose
// synchronous calls go to models/{model}:generateContent and
// :streamGenerateContent?alt=sse, in the standard tier or, for a Request
// with Flex set, in the flex tier (serviceTier "flex").
//
// A Request names its model in its body's "model" member ("gemini-2.5-flash"
// or "models/gemini-2.5-flash", as a batched request writes it), or in its
// Endpoint, the model method path "/v1beta/models/{model}:generateContent"
// (the path a client called); the member is not sent on a synchronous
// call. The credential's APIKey goes in x-goog-api-key, an AuthToken as a
// Bearer token.
//
// A flex call shed for lack of capacity (503 UNAVAILABLE or 429
// RESOURCE_EXHAUSTED, with a RetryInfo) is an *llmfleet.Error matching
// llmfleet.ErrFlexUnavailable, not billed; one refused for the model (a
// 400 naming the service tier) matches llmfleet.ErrFlexUnsupported. A
// Response's Tier is the tier the x-gemini-service-tier header (else
// usageMetadata.serviceTier) says served it. Error types are Google's
// canonical statuses (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...).
//
// Batches go through Batch Mode: inline requests while the create body
// fits 20 MB, else a JSONL file of {"key", "request"} lines uploaded
// through the Files API; each inline request carries its custom_id in its
// metadata as {"key": ...}. The create is not idempotent: the batch's
// displayName is llmfleet's tag, by which FindBatch finds it. A batch
// expires 48 hours after its create (ExpiresAt); a cancelled or expired
// batch's requests that did not run are canceled or expired results.
package gemini

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
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// DefaultBaseURL is the Gemini API, without the version.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Name is the provider's name.
const Name = "gemini"

// Limits of one batch: llmfleet's choice (the API takes files up to
// 2 GB; beyond 20 MB a batch goes as a file).
const (
	MaxBatchRequests = 50_000
	MaxBatchBytes    = 200 << 20
)

// Provider is the Gemini API as an llmfleet.Provider. Its zero value calls
// the real API with a pooled client of its own.
type Provider struct {
	// BaseURL is the API's base URL, without "/v1beta"; empty means
	// DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests; nil means a client with pooled
	// keep-alive connections and no overall timeout (the caller's context
	// bounds each call).
	HTTPClient *http.Client
	// MaxRetries is the number of retries of each call of a batch create;
	// 0 means DefaultMaxRetries, negative none.
	MaxRetries int
	// Clock tells the time and times the waits before retries; nil means
	// the real clock.
	Clock llmfleet.Clock
	// InlineBytes is the largest create body sent inline; a larger batch
	// goes as a file. 0 means geminiwire.MaxInlineBytes (20 MB), the API's
	// limit.
	InlineBytes int
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

// Name returns "gemini".
func (p *Provider) Name() string { return Name }

// Limits returns the limits of one batch.
func (p *Provider) Limits() llmfleet.BatchLimits {
	return llmfleet.BatchLimits{MaxRequests: MaxBatchRequests, MaxBytes: MaxBatchBytes}
}

// invalid is the INVALID_ARGUMENT error of a request llmfleet cannot send.
func invalid(msg string) *llmfleet.Error {
	return &llmfleet.Error{StatusCode: http.StatusBadRequest, Type: geminiwire.StatusInvalidArgument, Message: msg,
		Body: geminiwire.Envelope(http.StatusBadRequest, msg)}
}

// modelOf returns the model of a request body or endpoint; they must
// agree when both name one.
func modelOf(body []byte, endpoint string) (string, error) {
	var m struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return "", invalid("Invalid JSON payload received. " + err.Error())
	}
	model := geminiwire.ModelName(m.Model)
	if endpoint != "" {
		em, method, ok := geminiwire.SplitMethod(endpoint)
		if !ok || (method != geminiwire.MethodGenerate && method != geminiwire.MethodStream) {
			return "", fmt.Errorf("gemini: %s is not an endpoint llmfleet routes", endpoint)
		}
		if model != "" && model != em {
			return "", invalid("The model in the request body (" + m.Model + ") does not match the model of the URL (models/" + em + ").")
		}
		model = em
	}
	if model == "" {
		return "", invalid("The request names no model.")
	}
	return model, nil
}

// Send makes a generateContent call of req's body, byte for byte but for
// its "model" member (the path's) and serviceTier "flex" when req.Flex is
// set, with the headers of req.Header but llmfleet's own and the
// credential's. A 2xx answer is a Response with its status, headers,
// body, usage, model version and served tier; an error answer an
// *llmfleet.Error in Google's envelope.
func (p *Provider) Send(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	res, err := p.post(ctx, req, geminiwire.MethodGenerate)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("gemini: reading the answer: %w", err)
	}
	resp := &llmfleet.Response{Route: llmfleet.RouteSync, StatusCode: res.StatusCode, Header: res.Header, Body: body}
	if a, err := geminiwire.ReadAnswer(body); err == nil {
		resp.Model, resp.Usage, resp.Tier = a.Model, a.Usage, a.Tier
	}
	if t := geminiwire.TierOf(res.Header.Get(geminiwire.TierHeader)); t != "" {
		resp.Tier = t
	}
	return resp, nil
}

// Stream makes a streamGenerateContent?alt=sse call and, once the API
// answers 2xx, returns its event stream (data-only events, each a
// GenerateContentResponse chunk), which the caller must close. An error
// answer, a flex refusal included, is an *llmfleet.Error.
func (p *Provider) Stream(ctx context.Context, req *llmfleet.Request) (io.ReadCloser, error) {
	res, err := p.post(ctx, req, geminiwire.MethodStream)
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// post sends req to method and returns a 2xx answer, or the error answer
// as an *llmfleet.Error.
func (p *Provider) post(ctx context.Context, req *llmfleet.Request, method string) (*http.Response, error) {
	model, err := modelOf(req.Body, req.Endpoint)
	if err != nil {
		return nil, err
	}
	body, err := jsonmember.Delete(req.Body, "model")
	if err == nil && req.Flex {
		body, err = jsonmember.Set(body, "serviceTier", []byte(`"flex"`))
	}
	if err != nil {
		return nil, invalid("Invalid JSON payload received: the request body is not a JSON object.")
	}
	path := "/" + geminiwire.Version + "/models/" + model + ":" + method
	if method == geminiwire.MethodStream {
		path += "?alt=sse"
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		switch lk := strings.ToLower(k); {
		case strings.HasPrefix(lk, "llmfleet-"), lk == "x-goog-api-key", lk == "authorization", lk == "content-length":
			continue // llmfleet's own, or the credential's: set below
		}
		hr.Header[k] = append([]string(nil), vs...)
	}
	hr.Header.Set("Content-Type", "application/json")
	setCredential(hr, req.Credential)
	res, err := p.client().Do(hr)
	if err != nil {
		return nil, fmt.Errorf("gemini: %s: %w", method, err)
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return nil, geminiwire.ErrorOf(res.StatusCode, b, res.Header, req.Flex)
}

// setCredential sets cred on a request: its API key as x-goog-api-key,
// else its token as a Bearer token.
func setCredential(hr *http.Request, cred llmfleet.Credential) {
	if cred.APIKey != "" {
		hr.Header.Set(geminiwire.APIKeyHeader, cred.APIKey)
		return
	}
	hr.Header.Set("Authorization", "Bearer "+cred.AuthToken)
}

// Inspect reads a request's model and pool key: a batch holds one model,
// and belongs to the project that pays for it (x-goog-user-project, for
// a credential that names one).
func (p *Provider) Inspect(req *llmfleet.Request) (llmfleet.RequestInfo, error) {
	if len(bytes.TrimSpace(req.Body)) == 0 || bytes.TrimSpace(req.Body)[0] != '{' {
		return llmfleet.RequestInfo{}, errors.New("gemini: the request body is not a JSON object")
	}
	model, err := modelOf(req.Body, req.Endpoint)
	if err != nil {
		return llmfleet.RequestInfo{}, err
	}
	return llmfleet.RequestInfo{Model: model, PoolKey: model + "\x00" + req.Header.Get("X-Goog-User-Project")}, nil
}

// BatchParams returns the body a request goes into a batch with: without
// "stream" (a client's, which the API would refuse) and serviceTier (a
// batch has its own price), byte for byte otherwise.
func (p *Provider) BatchParams(req *llmfleet.Request) (json.RawMessage, error) {
	b := []byte(req.Body)
	for _, k := range []string{"stream", "serviceTier"} {
		var err error
		if b, err = jsonmember.Delete(b, k); err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
	}
	return b, nil
}
