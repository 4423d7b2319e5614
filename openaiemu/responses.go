package openaiemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/sse"
)

// responsesRequest is the part of a POST /v1/responses body the emulator
// reads; Input is a string or a list of messages.
type responsesRequest struct {
	Model       string          `json:"model"`
	Input       json.RawMessage `json:"input"`
	ServiceTier string          `json:"service_tier"`
	Stream      bool            `json:"stream"`
}

type responseObject struct {
	ID          string           `json:"id"`
	Object      string           `json:"object"`
	CreatedAt   int64            `json:"created_at"`
	Status      string           `json:"status"`
	Model       string           `json:"model"`
	Output      []responseOutput `json:"output"`
	Usage       *responseUsage   `json:"usage"`
	ServiceTier string           `json:"service_tier"`
}

type responseOutput struct {
	Type    string            `json:"type"`
	ID      string            `json:"id"`
	Status  string            `json:"status"`
	Role    string            `json:"role"`
	Content []responseContent `json:"content"`
}

type responseContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	TotalTokens        int `json:"total_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "model", "Missing required parameter: 'model'.")
		return
	}
	var prompt string
	if json.Unmarshal(req.Input, &prompt) != nil {
		var msgs []chatMessage
		if err := json.Unmarshal(req.Input, &msgs); err != nil || len(msgs) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_type", "input", "Invalid 'input': expected a string or an array of input items.")
			return
		}
		prompt = lastUser(msgs)
	}
	tier, ok := s.tier(w, req.Model, req.ServiceTier)
	if !ok {
		return
	}
	s.billed(prompt)
	answer := "Answer to: " + prompt
	created := s.now().Unix()
	id := hashID("resp_", req.Model, prompt, fmt.Sprint(created))
	u := responseUsage{InputTokens: words(prompt), OutputTokens: words(answer)}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	done := responseObject{
		ID: id, Object: "response", CreatedAt: created, Status: "completed", Model: req.Model,
		Output: []responseOutput{{Type: "message", ID: hashID("msg_", id), Status: "completed", Role: "assistant",
			Content: []responseContent{{Type: "output_text", Text: answer, Annotations: []any{}}}}},
		Usage: &u, ServiceTier: tier,
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, done)
		return
	}
	streamResponse(w, done, answer)
}

// streamResponse answers a streamed POST /v1/responses with the events
// of done: response.created (the response in progress, no output, no
// usage), a response.output_text.delta per word of answer, and
// response.completed carrying done whole, as the API streams them.
func streamResponse(w http.ResponseWriter, done responseObject, answer string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(fields)
		w.Write(sse.AppendEvent(nil, typ, b))
	}
	created := done
	created.Status, created.Output, created.Usage = "in_progress", []responseOutput{}, nil
	event("response.created", map[string]any{"response": created})
	itemID := done.Output[0].ID
	for _, word := range strings.SplitAfter(answer, " ") {
		event("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": word})
	}
	event("response.completed", map[string]any{"response": done})
}
