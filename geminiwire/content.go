package geminiwire

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// The paths of the API, under the base URL.
const (
	// Version is the API version llmfleet speaks.
	Version = "v1beta"
	// VersionV1 is the stable version, the default of the @google/genai
	// SDK since 3.x: it serves the model methods (generateContent,
	// streamGenerateContent, countTokens) and the models' reads, not Batch
	// Mode nor the Files API.
	VersionV1 = "v1"
	// MethodGenerate, MethodStream and MethodBatch are the model methods:
	// POST /v1beta/models/{model}:<method>.
	MethodGenerate = "generateContent"
	MethodStream   = "streamGenerateContent"
	MethodBatch    = "batchGenerateContent"
)

// Part is one part of a Content. Only text parts are read; every other
// member (inlineData, functionCall, ...) is kept in Other by callers that
// need it, through the raw body.
type Part struct {
	Text string `json:"text,omitempty"`
	// Thought marks a part of the model's thinking summary.
	Thought bool `json:"thought,omitempty"`
}

// Content is a turn: a role ("user" or "model") and its parts.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Text returns the text of the content's parts that are not thoughts.
func (c *Content) Text() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// GenerateContentRequest is the body of generateContent and
// streamGenerateContent, as far as llmfleet reads it. Model is set only
// inside a batch (and tolerated on a sync call: it is the path's).
type GenerateContentRequest struct {
	Model             string          `json:"model,omitempty"`
	Contents          []Content       `json:"contents"`
	SystemInstruction *Content        `json:"systemInstruction,omitempty"`
	GenerationConfig  json.RawMessage `json:"generationConfig,omitempty"`
	CachedContent     string          `json:"cachedContent,omitempty"`
	ServiceTier       string          `json:"serviceTier,omitempty"`
}

// Candidate is one generated answer.
type Candidate struct {
	Content      *Content `json:"content,omitempty"`
	FinishReason string   `json:"finishReason,omitempty"`
	Index        int      `json:"index"`
}

// UsageMetadata is the token usage of an answer. promptTokenCount
// includes cachedContentTokenCount; thoughts are not in
// candidatesTokenCount but are billed as output.
type UsageMetadata struct {
	PromptTokenCount        int64  `json:"promptTokenCount"`
	CandidatesTokenCount    int64  `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount      int64  `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount int64  `json:"cachedContentTokenCount,omitempty"`
	ToolUsePromptTokenCount int64  `json:"toolUsePromptTokenCount,omitempty"`
	TotalTokenCount         int64  `json:"totalTokenCount"`
	ServiceTier             string `json:"serviceTier,omitempty"`
}

// GenerateContentResponse is the answer of generateContent, and each
// event of a stream (a chunk: the last one carries the finish reason and
// the whole usage).
type GenerateContentResponse struct {
	Candidates    []Candidate    `json:"candidates,omitempty"`
	UsageMetadata *UsageMetadata `json:"usageMetadata,omitempty"`
	ModelVersion  string         `json:"modelVersion,omitempty"`
	ResponseID    string         `json:"responseId,omitempty"`
}

// Text returns the text of the first candidate, thoughts left out.
func (r *GenerateContentResponse) Text() string {
	if len(r.Candidates) == 0 {
		return ""
	}
	return r.Candidates[0].Content.Text()
}

// ModelName returns a model's id without the "models/" prefix the API
// writes it with in bodies.
func ModelName(m string) string { return strings.TrimPrefix(m, "models/") }

// ModelPath returns the resource name of a model: "models/<id>".
func ModelPath(m string) string { return "models/" + ModelName(m) }

// Unversioned returns path without its version ("/v1beta" or "/v1") and
// the version; ok false when it begins with neither.
func Unversioned(path string) (rest, version string, ok bool) {
	for _, v := range []string{Version, VersionV1} {
		if rest, ok := strings.CutPrefix(path, "/"+v); ok && (rest == "" || rest[0] == '/') {
			return rest, v, true
		}
	}
	return path, "", false
}

// SplitMethod reads a model method path ("/v1beta/models/<id>:<method>",
// "/v1/models/<id>:<method>", or without the version) into the model's id
// and the method.
func SplitMethod(path string) (model, method string, ok bool) {
	unversioned, _, _ := Unversioned(path)
	rest, found := strings.CutPrefix(unversioned, "/models/")
	if !found {
		return "", "", false
	}
	model, method, ok = strings.Cut(rest, ":")
	if !ok || model == "" || method == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	return model, method, true
}

// APIKeyHeader is the header the API takes its key in.
const APIKeyHeader = "X-Goog-Api-Key"

// RequestKey returns the API key a call carries: its x-goog-api-key
// header, else its ?key= query parameter, as the API reads them.
func RequestKey(h http.Header, q url.Values) string {
	if k := h.Get(APIKeyHeader); k != "" {
		return k
	}
	return q.Get("key")
}
