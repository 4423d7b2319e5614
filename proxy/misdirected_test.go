package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// The official SDKs given a wrong base URL get a 404 in their own API's
// envelope that names the base URL to set (with the /budget/<ms> prefix
// they came under), not a bare 404 nor the upstream's; nothing goes
// upstream.
func TestMisdirectedBaseURLs(t *testing.T) {
	up := newUpstream(t)
	ts := newProxy(t, &proxy.Server{Submitter: &fakeSubmitter{route: llmfleet.RouteSync}}, up)
	ctx := context.Background()
	base := ts.URL

	// The OpenAI SDK: at /v1 (the Anthropic face's), at the root, at
	// /openai, at a /v1 too many.
	for _, c := range []struct{ at, want string }{
		{"/v1", base + "/openai/v1"},
		{"", base + "/openai/v1"},
		{"/openai", base + "/openai/v1"},
		{"/openai/v1/v1", base + "/openai/v1"},
		{"/v1/v1", base + "/openai/v1"},
		{"/budget/600000/v1", base + "/budget/600000/openai/v1"},
	} {
		client := sdk(base+c.at, "sk-a")
		_, chatErr := client.Chat.Completions.New(ctx, ask("hello"))
		_, respErr := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5-mini",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
		_, listErr := client.Batches.List(ctx, openai.BatchListParams{})
		for i, err := range []error{chatErr, respErr, listErr} {
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Code != "unknown_url" || oe.Type != "invalid_request_error" ||
				!strings.Contains(oe.Message, "set the OpenAI SDK's base URL (OPENAI_BASE_URL) to "+c.want+".") {
				t.Errorf("OpenAI SDK at %q, call %d: %v", c.at, i, err)
			}
		}
	}

	// The Anthropic SDK: at the OpenAI face (/openai, /openai/v1), at /v1.
	for _, c := range []struct{ at, want string }{
		{"/openai", base},
		{"/openai/v1", base},
		{"/v1", base},
		{"/budget/600000/openai", base + "/budget/600000"},
	} {
		client := newClient(base + c.at)
		_, err := client.Messages.New(ctx, userParams("hello"))
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 404 {
			t.Errorf("Anthropic SDK at %q: %v", c.at, err)
			continue
		}
		var env struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		json.Unmarshal([]byte(ae.RawJSON()), &env)
		if env.Type != "error" || env.Error.Type != "not_found_error" ||
			!strings.Contains(env.Error.Message, "set the Anthropic SDK's base URL (ANTHROPIC_BASE_URL) to "+c.want+", ") {
			t.Errorf("Anthropic SDK at %q: %s", c.at, ae.RawJSON())
		}
	}

	// A Google client at the root.
	resp, err := http.Post(base+"/v1beta/models/gemini-2.5-flash:generateContent", "application/json",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var genv struct {
		Error struct {
			Code            int
			Message, Status string
		}
	}
	json.Unmarshal(body, &genv)
	if resp.StatusCode != 404 || genv.Error.Status != "NOT_FOUND" ||
		!strings.Contains(genv.Error.Message, "(HttpOptions.BaseURL) to "+base+"/gemini.") {
		t.Errorf("Google client at the root: %d %s", resp.StatusCode, body)
	}

	if got := up.requests(); len(got) != 0 {
		t.Errorf("misdirected calls went upstream: %+v", got)
	}
	// The right base URLs still reach the faces.
	client := newClient(base)
	if _, err := client.Messages.New(ctx, userParams("hello")); err != nil {
		t.Errorf("the Anthropic face: %v", err)
	}
}
