package openaiemu_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/openaiemu"
)

func TestHandlerErrors(t *testing.T) {
	fault := func(path string) (int, string) {
		if path == "/v1/embeddings" {
			return http.StatusServiceUnavailable, "server_error"
		}
		return 0, ""
	}
	tests := []struct {
		name, method, path, auth, body string
		status                         int
		errType, code, param           string
	}{
		{"no key", "POST", "/v1/chat/completions", "", `{}`, 401, "invalid_request_error", "invalid_api_key", ""},
		{"bad json", "POST", "/v1/chat/completions", "Bearer k", `{`, 400, "invalid_request_error", "", ""},
		{"no model", "POST", "/v1/chat/completions", "Bearer k", `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "missing_required_parameter", "model"},
		{"no messages", "POST", "/v1/chat/completions", "Bearer k", `{"model":"gpt-5","messages":[]}`, 400, "invalid_request_error", "empty_array", "messages"},
		{"bad tier", "POST", "/v1/chat/completions", "Bearer k", `{"model":"gpt-5","messages":[{"role":"user","content":"x"}],"service_tier":"cheap"}`, 400, "invalid_request_error", "invalid_value", "service_tier"},
		{"flex unsupported", "POST", "/v1/responses", "Bearer k", `{"model":"gpt-4o","input":"x","service_tier":"flex"}`, 400, "invalid_request_error", "invalid_value", "service_tier"},
		{"bad input", "POST", "/v1/responses", "Bearer k", `{"model":"gpt-5","input":3}`, 400, "invalid_request_error", "invalid_type", "input"},
		{"unknown path", "POST", "/v1/nope", "Bearer k", `{}`, 404, "invalid_request_error", "unknown_url", ""},
		{"wrong method", "GET", "/v1/chat/completions", "Bearer k", ``, 405, "invalid_request_error", "method_not_allowed", ""},
		{"fault", "POST", "/v1/embeddings", "Bearer k", `{"model":"m","input":"x"}`, 503, "server_error", "", ""},
	}
	s := &openaiemu.Server{Fault: fault}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			var env struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			e := env.Error
			if e.Type != tt.errType || e.Message == "" || deref(e.Code) != tt.code || deref(e.Param) != tt.param {
				t.Errorf("error = %+v (code %q param %q)", e, deref(e.Code), deref(e.Param))
			}
		})
	}
	if got := s.Stats().Billed; len(got) != 0 {
		t.Errorf("billed = %v, want nothing", got)
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func TestStreamWireFormat(t *testing.T) {
	s := &openaiemu.Server{}
	req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(
		`{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`))
	req.Header.Set("Authorization", "Bearer k")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	body := rec.Body.String()
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type = %q", ct)
	}
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, `"object":"chat.completion.chunk"`) {
		t.Errorf("body = %s", body)
	}
	if strings.Contains(body, `"usage"`) {
		t.Errorf("usage sent without stream_options.include_usage: %s", body)
	}
}

// TestFaultDropAndRetryAfter: over a real connection, DropConnection
// closes it without an answer, and a 429 fault asks for FaultRetryAfter.
func TestFaultDropAndRetryAfter(t *testing.T) {
	s := &openaiemu.Server{FaultRetryAfter: 1500 * time.Millisecond, Fault: func(path string) (int, string) {
		switch path {
		case "/v1/files":
			return openaiemu.DropConnection, ""
		case "/v1/batches":
			return http.StatusTooManyRequests, "rate_limit_exceeded"
		}
		return 0, ""
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	post := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer k")
		return http.DefaultClient.Do(req)
	}
	if resp, err := post("/v1/files"); err == nil {
		resp.Body.Close()
		t.Fatalf("a dropped upload was answered %d", resp.StatusCode)
	}
	resp, err := post("/v1/batches")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After-Ms") != "1500" || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("429 fault: %d %v", resp.StatusCode, resp.Header)
	}
}
