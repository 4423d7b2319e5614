package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// ticketSubmitter is a fakeSubmitter that takes tickets: Enqueue fails
// with enqueueErr.
type ticketSubmitter struct {
	*fakeSubmitter
	enqueueErr error
}

func (s *ticketSubmitter) Enqueue(ctx context.Context, budget time.Duration, req *llmfleet.Request) (string, error) {
	return "", s.enqueueErr
}

func (s *ticketSubmitter) Lookup(ctx context.Context, id string, cred llmfleet.Credential) (*llmfleet.StoredRequest, error) {
	return nil, llmfleet.ErrNotFound
}

// storeError is an error of the engine's journal: its store write
// failed.
func storeError(cause error) error {
	return fmt.Errorf("dispatch: storing request: %w: %w", llmfleet.ErrStore,
		fmt.Errorf("postgres: adding request lfr_0001: %w", cause))
}

// A request llmfleet could not record in its database is answered 503,
// naming the database and the driver's short cause, telling that nothing
// went to the provider, in the face's envelope, on the batch route and
// async, with a Retry-After on the Anthropic face; no password or key an
// error might carry reaches the client.
func TestStoreFailureAnswered(t *testing.T) {
	const readOnly = "ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)"
	want := "llmfleet could not record the request in its database (" + readOnly +
		"); nothing was sent to the provider: retry shortly"
	cases := []struct {
		name, want string
		cause      error
		secrets    []string
	}{
		{"read-only", want, errors.New(readOnly), nil},
		{"secrets", "", errors.New("dial postgres://fleet:hunter2@db.internal/fleet?password=hunter3 with sk-ant-api03-leakme: refused"),
			[]string{"hunter2", "hunter3", "leakme"}},
		{"long", "", errors.New(strings.Repeat("x", 2000)), []string{strings.Repeat("x", 200)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := storeError(c.cause)
			sub := &ticketSubmitter{enqueueErr: err, fakeSubmitter: &fakeSubmitter{
				reply: func(context.Context, *llmfleet.Request) (*llmfleet.Response, error) { return nil, err }}}
			ts := newProxy(t, &proxy.Server{Submitter: sub, DefaultBudget: time.Hour}, nil)
			body := `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
			for _, hdr := range [][]string{{"llmfleet-route", "batch"}, {"Prefer", "respond-async"}} {
				resp := post(t, ts.URL+"/v1/messages", body, hdr...)
				got := readAll(t, resp.Body)
				var env struct {
					Type  string
					Error struct{ Type, Message string }
				}
				json.Unmarshal([]byte(got), &env)
				if resp.StatusCode != http.StatusServiceUnavailable || env.Type != "error" || env.Error.Type != "api_error" ||
					resp.Header.Get("Retry-After") == "" {
					t.Fatalf("%s: %d Retry-After %q %s", hdr[0], resp.StatusCode, resp.Header.Get("Retry-After"), got)
				}
				checkStoreMessage(t, "anthropic "+hdr[0], env.Error.Message, c.want, c.secrets)
			}
			resp := postOpenAI(t, ts.URL+"/openai/v1/chat/completions",
				`{"model":"gpt-4.1","messages":[{"role":"user","content":"x"}]}`, "llmfleet-route", "batch")
			got := readAll(t, resp.Body)
			var env struct {
				Error struct{ Type, Message string }
			}
			json.Unmarshal([]byte(got), &env)
			if resp.StatusCode != http.StatusServiceUnavailable || env.Error.Type != "server_error" {
				t.Fatalf("openai: %d %s", resp.StatusCode, got)
			}
			checkStoreMessage(t, "openai", env.Error.Message, c.want, c.secrets)
		})
	}
}

// checkStoreMessage checks a store failure's message: want exactly, if
// given, and none of secrets in it.
func checkStoreMessage(t *testing.T, face, msg, want string, secrets []string) {
	t.Helper()
	if want != "" && msg != want {
		t.Fatalf("%s: message %q, want %q", face, msg, want)
	}
	if !strings.HasPrefix(msg, "llmfleet could not record the request in its database (") ||
		!strings.HasSuffix(msg, "nothing was sent to the provider: retry shortly") || len(msg) > 400 {
		t.Fatalf("%s: message %q", face, msg)
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Fatalf("%s: message %q carries %q", face, msg, s)
		}
	}
}

// postOpenAI sends a raw request to the proxy's OpenAI face.
func postOpenAI(t *testing.T, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test-a")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
