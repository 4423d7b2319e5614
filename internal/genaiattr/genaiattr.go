// Package genaiattr is the one place that names the attributes of
// llmfleet's spans: those of the OpenTelemetry GenAI semantic
// conventions it sets (gen_ai.*) and llmfleet's own (llmfleet.*), shared
// by the proxy's spans and the dispatcher's.
package genaiattr

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/llmfleet/llmfleet"
)

// llmfleet's own attributes, which no semantic convention names.
const (
	Route    = attribute.Key("llmfleet.route")
	BudgetMS = attribute.Key("llmfleet.budget_ms")
	BatchID  = attribute.Key("llmfleet.batch_id")
	Rescue   = attribute.Key("llmfleet.rescue")
	CostUSD  = attribute.Key("llmfleet.cost_usd")
)

// The GenAI semantic conventions' attributes llmfleet sets.
const (
	ProviderName  = attribute.Key("gen_ai.provider.name")
	OperationName = attribute.Key("gen_ai.operation.name")
	RequestModel  = attribute.Key("gen_ai.request.model")
	ResponseModel = attribute.Key("gen_ai.response.model")
)

// Provider returns the conventions' name of a provider of llmfleet's
// (anthropic, openai, gemini): gcp.gemini for Gemini, the name itself
// otherwise.
func Provider(name string) string {
	if name == "gemini" {
		return "gcp.gemini"
	}
	return name
}

// Usage returns the usage attributes of u: input tokens counting those
// read from and written to the prompt cache (as the conventions count
// them), which have attributes of their own too, and output tokens.
func Usage(u llmfleet.Usage) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs,
		attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens))
	if u.CacheReadInputTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens))
	}
	if u.CacheCreationInputTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheCreationInputTokens))
	}
	return attrs
}
