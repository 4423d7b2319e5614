package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Review round 11: the OpenAI and Anthropic faces, and what is common to
// all faces, against what the real front ends act on.

// TestHeldSec11ComparisonResponseOfAnother: the Responses API's
// prompt_cache_options.comparison_response_id names a stored response as
// the baseline of prompt cache diagnostics. OpenAI's guide
// (developers.openai.com/api/docs/guides/prompt-caching/diagnostics: "Set
// comparison_response_id in prompt_cache_options to the ID of a recent,
// completed response from the same organization") and openai-go v3.96
// (responses.ResponseNewParamsPromptCacheOptions.ComparisonResponseID;
// Response.PromptCacheDiagnostics: cache_hit / cache_miss with a reason
// among model_changed, tools_changed, input_changed, ..., the
// comparison's reusable prefix in tokens, or
// comparison_response_not_found) say the API compares the call with that
// response. Under the one shared key every client's response is "from
// the same organization": a client naming another's response learns
// whether it exists, its model, whether its tools match, and how many
// tokens of its prompt prefix the caller's guess shares, a token-by-token
// oracle on another client's prompt. It is the OpenAI counterpart of
// Anthropic's diagnostics.previous_message_id (TestHeldDiagnosticsOfAnothersMessage),
// and must be refused likewise, on a routed call and in a batch's
// requests; the proxy checks only previous_response_id, conversation and
// input items (responseRefs).
func TestHeldSec11ComparisonResponseOfAnother(t *testing.T) {
	var mu sync.Mutex
	var compared []string
	ts, _ := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/v1/files":
			answerJSON(w, `{"id":"file-a","object":"file","purpose":"batch","filename":"x","bytes":1,"created_at":1,"status":"processed"}`)
		case r.URL.Path == "/v1/files/file-a/content":
			io.WriteString(w, `{"custom_id":"1","method":"POST","url":"/v1/responses","body":{"model":"gpt-5.6","input":"guess","prompt_cache_options":{"comparison_response_id":"resp_kb"}}}`+"\n")
		case r.URL.Path == "/v1/batches":
			mu.Lock()
			compared = append(compared, "batch create")
			mu.Unlock()
			answerJSON(w, `{"id":"batch_1","object":"batch","status":"validating"}`)
		case r.URL.Path == "/v1/responses":
			id := "resp_kb"
			diag := `null`
			if strings.Contains(string(b), "comparison_response_id") {
				mu.Lock()
				compared = append(compared, string(b))
				mu.Unlock()
				id = "resp_a"
				diag = `{"type":"cache_miss","reason":"input_changed","cache_missed_tokens":12,"comparison_reusable_tokens":1811}`
			}
			answerJSON(w, `{"id":"`+id+`","object":"response","created_at":1,"status":"completed","model":"gpt-5.6","output":[],`+
				`"prompt_cache_diagnostics":`+diag+`,"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	if code, b := heldCall(t, ts, "POST", "kb", "/openai/v1/responses", `{"model":"gpt-5.6","input":"kb's system prompt and payroll"}`); code != 200 || !strings.Contains(b, "resp_kb") {
		t.Fatalf("kb's response: %d %s", code, b)
	}
	if code, _ := heldCall(t, ts, "POST", "ka", "/openai/v1/responses", `{"model":"gpt-5.6","previous_response_id":"resp_kb","input":"hi"}`); code != 404 {
		t.Fatalf("previous_response_id of kb's response: %d, want 404 (the check this test goes around)", code)
	}
	code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-5.6","input":"kb's system prompt and pay","prompt_cache_options":{"comparison_response_id":"resp_kb"}}`)
	if code != http.StatusNotFound || strings.Contains(b, "comparison_reusable_tokens") {
		t.Errorf("ka's call diagnosed against kb's response: %d %s\nwant a 404 as for an unknown response, nothing upstream", code, b)
	}
	// The same through a batch of ka's own: its input file's request
	// names kb's response.
	heldCall(t, ts, "POST", "ka", "/openai/v1/files", "x") // file-a
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/batches",
		`{"input_file_id":"file-a","endpoint":"/v1/responses","completion_window":"24h"}`); code != http.StatusNotFound {
		t.Errorf("ka's batch whose request is diagnosed against kb's response: %d %s, want 404", code, b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(compared) != 0 {
		t.Errorf("upstream got ka's calls naming kb's response: %q", compared)
	}
}

// TestHeldSec11AnthropicAccountHeadersDropped: with proxy-held keys the
// Anthropic face passes every anthropic-* header upstream (the reverse
// proxy keeps them; a batched call's passHeaders too), among them the two
// by which an Anthropic call picks whom it acts for under a key:
//
//   - anthropic-workspace-id: anthropic-sdk-go v1.84
//     (BetaMessageNewParams.WorkspaceID, and every beta resource's) says
//     "Only needed for credentials that can act on more than one
//     Workspace"; the Claude Platform on AWS guide
//     (docs.aws.amazon.com/claude-platform/latest/userguide/workspaces.md)
//     says inference and resource requests target the workspace it names,
//     and that "usage, quotas, cost, files, batches, and Skills all roll
//     up per workspace". Under the operator's credential
//     (upstream-auth-token-env) a client picks another of its workspaces:
//     the one the round-10 fix closed on the OpenAI face for
//     OpenAI-Organization/OpenAI-Project (TestHeldOpenAIAccountHeadersDropped).
//   - anthropic-user-profile-id: platform.claude.com/docs/en/manage-claude/user-profiles
//     says a gateway sends the uprof_ id of the end customer a request is
//     for, so that "a safety enforcement action, such as a hold or a
//     block, can then apply to one profile". A client sending another
//     client's profile id has its own traffic, and any enforcement it
//     draws, attributed to that client (a hold or block of the other
//     client's profile: altering another client's standing).
//
// Both are the operator's choice under the key it holds; a client's must
// not go upstream (dropped, as the OpenAI face's are), on routed and
// shared calls alike.
func TestHeldSec11AnthropicAccountHeadersDropped(t *testing.T) {
	ts, seen := headerSpy(t, func(path string) string {
		if path == "/v1/messages/count_tokens" {
			return `{"input_tokens":3}`
		}
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	}, "Anthropic-Workspace-Id", "Anthropic-User-Profile-Id")
	hdr := []string{"anthropic-workspace-id", "wrkspc_other", "anthropic-user-profile-id", "uprof_other"}
	body := `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	if code, b := heldCall(t, ts, "POST", "ka", "/v1/messages", body, hdr...); code != 200 {
		t.Fatalf("messages: %d %s", code, b)
	}
	if code, b := heldCall(t, ts, "POST", "ka", "/v1/messages/count_tokens", body, hdr...); code != 200 {
		t.Fatalf("count_tokens: %d %s", code, b)
	}
	wantNoneOther(t, seen(), 2)
}

// TestHeldSec11OwnBackgroundResponseFalselyRefused (a false refusal, not
// a leak): a /v1/responses call with "background": true is routed and
// passed upstream under the shared key, and answered at once with the
// response queued (openai-go v3.96 ResponseNewParams.Background: "Whether
// to run the model response in the background"; its result is read by
// polling GET /v1/responses/{id}, openai-go's ResponseService.Get, and
// it is stopped by POST /v1/responses/{id}/cancel, ResponseService.Cancel). The proxy records the response as the
// client's as the answer passes, yet refuses every call about it (403: no
// /v1/responses/{id} path is owned): the client pays for an answer it can
// never read. Its owner's GET (and cancel) should pass, by owner, as a
// file's does; another client's stays refused.
func TestHeldSec11OwnBackgroundResponseFalselyRefused(t *testing.T) {
	ts, _ := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		status := "queued"
		if r.Method == http.MethodGet {
			status = "completed"
		}
		answerJSON(w, `{"id":"resp_bg","object":"response","created_at":1,"status":"`+status+`","background":true,"model":"gpt-4.1","output":[]}`)
	})
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":"long job","background":true}`); code != 200 || !strings.Contains(b, "queued") {
		t.Fatalf("ka's background response: %d %s", code, b)
	}
	if code, b := heldCall(t, ts, "GET", "ka", "/openai/v1/responses/resp_bg", ""); code != http.StatusOK {
		t.Errorf("ka polls its own background response: %d %s, want 200", code, b)
	}
	if code, b := heldCall(t, ts, "GET", "kb", "/openai/v1/responses/resp_bg", ""); code == http.StatusOK || strings.Contains(b, "completed") {
		t.Errorf("kb polls ka's background response: %d %s, want it refused", code, b)
	}
}
