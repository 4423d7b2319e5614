package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/proxy"
)

// submitAsync posts an async request with the credential header name:
// value and returns its ticket id.
func submitAsync(t *testing.T, base, body, name, value string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
	req.Header.Set(name, value)
	req.Header.Set("Prefer", "respond-async")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("llmfleet-request-id")
	if resp.StatusCode != http.StatusAccepted || id == "" {
		t.Fatalf("async request with %s: %d", name, resp.StatusCode)
	}
	return id
}

// TestTicketReadableWithEitherHeader checks that a ticket belongs to the
// key, not to the header that carried it: made with x-api-key: K it reads
// with Authorization: Bearer K and the other way round, in both modes;
// another key never reads it.
func TestTicketReadableWithEitherHeader(t *testing.T) {
	keys := &proxy.ClientKeys{
		Upstream: llmfleet.Credential{APIKey: "sk-upstream"},
		Hashes:   map[string]string{proxy.HashKey("alice-key"): "alice", proxy.HashKey("bob-key"): "bob"},
	}
	for _, mode := range []struct {
		name       string
		srv        *proxy.Server
		key, other string
	}{
		{"own keys", nil, "sk-test-a", "sk-test-b"},
		{"client keys", &proxy.Server{Credentials: keys.Map}, "alice-key", "bob-key"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			st := newDurableStack(t, dispatch.Policy{}, mode.srv)
			byKey := submitAsync(t, st.ts.URL, userBody("by key"), "X-Api-Key", mode.key)
			byBearer := submitAsync(t, st.ts.URL, userBody("by bearer"), "Authorization", "Bearer "+mode.key)
			for _, c := range []struct{ id, reader, want string }{
				{byKey, "Bearer " + mode.key, "Answer to: by key"},
				{byKey, mode.key, "Answer to: by key"},
				{byBearer, mode.key, "Answer to: by bearer"},
				{byBearer, "Bearer " + mode.key, "Answer to: by bearer"},
			} {
				got, _ := fetch(t, st.ts.URL, c.id, c.reader)
				if got.status != 200 || !strings.Contains(got.body, c.want) {
					t.Fatalf("%s read by %q: %+v", c.id, c.reader, got)
				}
			}
			for _, id := range []string{byKey, byBearer} {
				for _, reader := range []string{mode.other, "Bearer " + mode.other} {
					assertNotFound(t, get(t, st.ts.URL, proxy.RequestsPath+id, reader))
				}
			}
		})
	}
}
