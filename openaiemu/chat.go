package openaiemu

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/sse"
)

// chatRequest is the part of a chat completion request the emulator reads.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	ServiceTier   string        `json:"service_tier"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message's text: a string content or its text parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usage       `json:"usage,omitempty"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// chatChunk is one chunk of a streamed chat completion. With
// stream_options.include_usage every chunk has "usage": null but the last,
// which has no choices and the whole usage; without, no usage member.
// Every chunk carries an obfuscation member, as the API's do.
type chatChunk struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             any          `json:"usage,omitempty"`
	Obfuscation       string       `json:"obfuscation"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *replyMessage   `json:"message,omitempty"`
	Delta        *replyMessage   `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

type replyMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
	Refusal *string `json:"refusal"`
}

const fingerprint = "fp_emulator"

// hashID derives a stable id with prefix from the parts.
func hashID(prefix string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return prefix + hex.EncodeToString(h[:12])
}

func lastUser(msgs []chatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].text()
		}
	}
	return ""
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "model", "you must provide a model parameter")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "empty_array", "messages", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
		return
	}
	prompt := lastUser(req.Messages)
	if directedError(w, prompt) {
		return
	}
	tier, ok := s.tier(w, req.Model, req.ServiceTier)
	if !ok {
		return
	}
	s.billed(prompt)
	answer := "Answer to: " + prompt
	in := 0
	for _, m := range req.Messages {
		in += words(m.text())
	}
	u := usage{PromptTokens: in, CompletionTokens: words(answer)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	created := s.now().Unix()
	id := hashID("chatcmpl-", req.Model, prompt, fmt.Sprint(created))
	stop := "stop"
	if !req.Stream {
		writeJSON(w, http.StatusOK, chatCompletion{
			ID: id, Object: "chat.completion", Created: created, Model: req.Model,
			Choices: []chatChoice{{Message: &replyMessage{Role: "assistant", Content: &answer},
				FinishReason: &stop, Logprobs: json.RawMessage("null")}},
			Usage: &u, ServiceTier: tier, SystemFingerprint: fingerprint,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	withUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	n := 0
	chunk := func(c chatChoice, u *usage) {
		ch := chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			ServiceTier: tier, SystemFingerprint: fingerprint, Choices: []chatChoice{}}
		if c.Delta != nil {
			c.Logprobs = json.RawMessage("null")
			ch.Choices = append(ch.Choices, c)
		}
		if withUsage {
			ch.Usage = json.RawMessage("null")
			if u != nil {
				ch.Usage = u
			}
		}
		ch.Obfuscation = obfuscation(id, n, len(ch.Choices))
		n++
		b, _ := json.Marshal(ch)
		w.Write(sse.AppendEvent(nil, "", b))
	}
	empty := ""
	chunk(chatChoice{Delta: &replyMessage{Role: "assistant", Content: &empty}}, nil)
	for _, word := range strings.SplitAfter(answer, " ") {
		piece := word
		chunk(chatChoice{Delta: &replyMessage{Content: &piece}}, nil)
	}
	chunk(chatChoice{Delta: &replyMessage{}, FinishReason: &stop}, nil)
	if withUsage {
		chunk(chatChoice{}, &u)
	}
	w.Write(sse.AppendEvent(nil, "", []byte("[DONE]")))
}
