package openaiemu

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// responsesRequest is the part of a POST /v1/responses body the emulator
// reads; Input is a string or a list of messages.
type responsesRequest struct {
	Model       string          `json:"model"`
	Input       json.RawMessage `json:"input"`
	ServiceTier string          `json:"service_tier"`
	Stream      bool            `json:"stream"`
	Background  bool            `json:"background"`
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
	Background  bool             `json:"background"`
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
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
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
			Content: []responseContent{{Type: "output_text", Text: answer, Annotations: []any{}, Logprobs: []any{}}}}},
		Usage: &u, ServiceTier: tier, Background: req.Background,
	}
	if req.Background {
		// The response runs on, billed when it ends, and is read (or
		// cancelled, once it has ended: the final object) by its id,
		// done at once (getResponse); unstreamed, it is answered queued.
		s.mu.Lock()
		if s.background == nil {
			s.background = map[string]backgroundResponse{}
		}
		s.background[id] = backgroundResponse{owner: owner(r), done: done}
		s.mu.Unlock()
	}
	if req.Background && !req.Stream {
		queued := done
		queued.Status, queued.Output, queued.Usage = "queued", []responseOutput{}, nil
		writeJSON(w, http.StatusOK, queued)
		return
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, done)
		return
	}
	streamResponse(w, done, answer)
}

// backgroundResponse is a background response as it ended, and who made
// it.
type backgroundResponse struct {
	owner string
	done  responseObject
}

// getResponse serves GET /v1/responses/{id}, and its cancel: a background
// response of the caller's, ended (a cancel of an ended response answers
// it as it ended).
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.background[r.PathValue("id")]
	s.mu.Unlock()
	if !ok || b.owner != owner(r) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "", "Response with id '"+r.PathValue("id")+"' not found.")
		return
	}
	writeJSON(w, http.StatusOK, b.done)
}
