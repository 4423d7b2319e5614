package openaiwire

import (
	"encoding/json"

	"github.com/llmfleet/llmfleet"
)

// The endpoints llmfleet routes by latency budget; every other path of
// the API is passed through.
const (
	ChatCompletions = "/v1/chat/completions"
	Responses       = "/v1/responses"
	Embeddings      = "/v1/embeddings"
)

// Routed reports whether llmfleet routes an endpoint (and may batch it).
func Routed(endpoint string) bool {
	switch endpoint {
	case ChatCompletions, Responses, Embeddings:
		return true
	}
	return false
}

// Flexible reports whether an endpoint takes the flex tier (embeddings do
// not).
func Flexible(endpoint string) bool { return endpoint == ChatCompletions || endpoint == Responses }

// TierOf maps an answer's service_tier onto llmfleet's tiers: "flex",
// "batch" and "priority" (or its 2026 name "fast") as themselves; "default",
// "auto", "standard" and "scale" as TierStandard; "" (none reported) as "".
func TierOf(serviceTier string) llmfleet.Tier {
	switch serviceTier {
	case "":
		return ""
	case "flex":
		return llmfleet.TierFlex
	case "batch":
		return llmfleet.TierBatch
	case "priority", "fast":
		return llmfleet.TierPriority
	}
	return llmfleet.TierStandard
}

// usageFields is the usage object of any of the routed endpoints: chat
// completions and embeddings count prompt and completion tokens, responses
// input and output tokens, each with the cached part of the input.
type usageFields struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// UsageOf maps a raw usage object onto llmfleet.Usage: the cached part of
// the input is CacheReadInputTokens, the rest InputTokens; output (reasoning
// included) is OutputTokens. OpenAI bills no cache writes.
func UsageOf(raw json.RawMessage) llmfleet.Usage {
	var f usageFields
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil {
		return llmfleet.Usage{}
	}
	in, cached := f.PromptTokens+f.InputTokens, f.PromptTokensDetails.CachedTokens+f.InputTokensDetails.CachedTokens
	cached = min(max(cached, 0), in)
	return llmfleet.Usage{InputTokens: in - cached, CacheReadInputTokens: cached,
		OutputTokens: f.CompletionTokens + f.OutputTokens}
}

// Answer is what llmfleet reads of a routed endpoint's answer body.
type Answer struct {
	Model string
	Usage llmfleet.Usage
	Tier  llmfleet.Tier
	// ID, Status and Background are a response's (/v1/responses): a
	// background response is answered queued, and billed when it ends.
	ID, Status string
	Background bool
}

// Queued reports whether a is a background response that has not ended:
// what it will cost is not known yet.
func (a Answer) Queued() bool {
	return a.Background && (a.Status == "queued" || a.Status == "in_progress")
}

// Ended reports whether a is a background response that has ended
// (completed, incomplete, failed or cancelled): its usage is its bill.
func (a Answer) Ended() bool {
	switch a.Status {
	case "completed", "incomplete", "failed", "cancelled":
		return a.Background
	}
	return false
}

// AnswerMembers are the top-level members of an answer ReadAnswer reads.
var AnswerMembers = []string{"model", "usage", "service_tier", "id", "status", "background"}

// ReadAnswer reads the model, usage and served tier of an answer body (a
// chat.completion, a response or an embedding list), and a response's id,
// status and whether it runs in the background.
func ReadAnswer(body []byte) (Answer, error) {
	var a struct {
		Model       string          `json:"model"`
		Usage       json.RawMessage `json:"usage"`
		ServiceTier string          `json:"service_tier"`
		ID          string          `json:"id"`
		Status      string          `json:"status"`
		Background  bool            `json:"background"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return Answer{}, err
	}
	return Answer{Model: a.Model, Usage: UsageOf(a.Usage), Tier: TierOf(a.ServiceTier), ID: a.ID, Status: a.Status, Background: a.Background}, nil
}
