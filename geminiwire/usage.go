package geminiwire

import (
	"encoding/json"

	"github.com/llmfleet/llmfleet"
)

// TierHeader is the response header naming the tier that served a call.
const TierHeader = "X-Gemini-Service-Tier"

// The service tiers of the API's serviceTier (request and usage).
const (
	TierStandard = "standard"
	TierFlex     = "flex"
	TierPriority = "priority"
)

// TierOf maps a served tier (usageMetadata.serviceTier or the
// x-gemini-service-tier header; the case is not significant: the REST
// examples write "FLEX") onto llmfleet's tiers; "" (none reported) is "".
func TierOf(tier string) llmfleet.Tier {
	switch lower(tier) {
	case "":
		return ""
	case "flex":
		return llmfleet.TierFlex
	case "priority":
		return llmfleet.TierPriority
	}
	return llmfleet.TierStandard
}

// lower lowercases ASCII letters.
func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Usage maps usage metadata onto llmfleet.Usage: the cached content is
// CacheReadInputTokens and the rest of the prompt (tool results included)
// InputTokens; candidates and thoughts are OutputTokens, thinking being
// billed as output. Gemini bills no per-token cache writes (an explicit
// cache is paid for by its storage time).
func (u *UsageMetadata) Usage() llmfleet.Usage {
	if u == nil {
		return llmfleet.Usage{}
	}
	cached := min(max(u.CachedContentTokenCount, 0), max(u.PromptTokenCount, 0))
	return llmfleet.Usage{
		InputTokens:          max(u.PromptTokenCount, 0) - cached + max(u.ToolUsePromptTokenCount, 0),
		CacheReadInputTokens: cached,
		OutputTokens:         max(u.CandidatesTokenCount, 0) + max(u.ThoughtsTokenCount, 0),
	}
}

// Answer is what llmfleet reads of a GenerateContentResponse.
type Answer struct {
	Model string
	Usage llmfleet.Usage
	Tier  llmfleet.Tier
}

// ReadAnswer reads the model version, usage and served tier of a
// GenerateContentResponse body.
func ReadAnswer(body []byte) (Answer, error) {
	var r GenerateContentResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Answer{}, err
	}
	a := Answer{Model: r.ModelVersion, Usage: r.UsageMetadata.Usage()}
	if r.UsageMetadata != nil {
		a.Tier = TierOf(r.UsageMetadata.ServiceTier)
	}
	return a, nil
}
