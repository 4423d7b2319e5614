package proxy_test

import (
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
)

// batchCall sends method path with body to the proxy as the client key.
func batchCall(t *testing.T, base, method, path, body, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(t, resp.Body)
}

// listIDs lists the batches the client key sees, following has_more, and
// checks that each page is consistent.
func listIDs(t *testing.T, base, key, query string) []string {
	t.Helper()
	var ids []string
	after := ""
	for range 100 {
		q := url.Values{}
		if after != "" {
			q.Set("after_id", after)
		}
		if query != "" {
			extra, _ := url.ParseQuery(query)
			for k, v := range extra {
				q[k] = v
			}
		}
		status, body := batchCall(t, base, "GET", "/v1/messages/batches?"+q.Encode(), "", key)
		if status != 200 {
			t.Fatalf("list as %s: %d %s", key, status, body)
		}
		var page struct {
			Data    []struct{ ID string }
			HasMore bool    `json:"has_more"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Data) == 0 {
			if page.HasMore || page.FirstID != nil || page.LastID != nil {
				t.Fatalf("empty page %s", body)
			}
			return ids
		}
		if *page.FirstID != page.Data[0].ID || *page.LastID != page.Data[len(page.Data)-1].ID {
			t.Fatalf("page ids %s", body)
		}
		for _, d := range page.Data {
			ids = append(ids, d.ID)
		}
		if !page.HasMore {
			return ids
		}
		after = *page.LastID
	}
	t.Fatal("list does not end")
	return nil
}

const batchBody = `{"requests":[{"custom_id":"a","params":{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}}]}`

// TestBatchesOwnedInClientKeysMode checks the pass-through Message Batches
// API in proxy-held-key mode: a client sees and acts on only the batches
// it created, also after a restart of the proxy on the same database.
func TestBatchesOwnedInClientKeysMode(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	emu := httptest.NewServer(&emulator.Server{
		Turnaround: func(string, *rand.Rand) time.Duration { return 0 },
		Logger:     quiet,
	})
	t.Cleanup(emu.Close)
	up, _ := url.Parse(emu.URL)
	keys := &proxy.ClientKeys{
		Upstream: llmfleet.Credential{APIKey: "sk-upstream"},
		Hashes:   map[string]string{proxy.HashKey("alice-key"): "alice", proxy.HashKey("bob-key"): "bob"},
	}
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	start := func() (*httptest.Server, *sqlite.DB) {
		db := &sqlite.DB{Path: path, Logger: quiet}
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv := &proxy.Server{Upstream: up, Credentials: keys.Map, BatchOwners: db, Logger: quiet,
			Fingerprint: func(c llmfleet.Credential) string { return c.Fingerprint([]byte("instance secret")) }}
		return httptest.NewServer(srv.Handler()), db
	}
	ts, db := start()

	create := func(key string) string {
		status, body := batchCall(t, ts.URL, "POST", "/v1/messages/batches", batchBody, key)
		var b struct{ ID string }
		if status != 200 || json.Unmarshal([]byte(body), &b) != nil || b.ID == "" {
			t.Fatalf("create as %s: %d %s", key, status, body)
		}
		return b.ID
	}
	var alice, bob []string
	for i := range 7 { // interleaved, so that pages mix the two
		alice = append(alice, create("alice-key"))
		if i%2 == 0 {
			bob = append(bob, create("bob-key"))
		}
	}
	// A batch made under the upstream key by someone else (the
	// dispatcher) belongs to no client.
	req, _ := http.NewRequest("POST", emu.URL+"/v1/messages/batches", strings.NewReader(batchBody))
	req.Header.Set("X-Api-Key", "sk-upstream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("direct create: %v %v", resp, err)
	}
	var own struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&own)
	resp.Body.Close()

	check := func(ts *httptest.Server) {
		t.Helper()
		newestFirst := func(ids []string) []string { r := slices.Clone(ids); slices.Reverse(r); return r }
		for _, q := range []string{"", "limit=2", "limit=1"} {
			if got := listIDs(t, ts.URL, "alice-key", q); !slices.Equal(got, newestFirst(alice)) {
				t.Fatalf("alice lists (%s) %v, want %v", q, got, newestFirst(alice))
			}
			if got := listIDs(t, ts.URL, "bob-key", q); !slices.Equal(got, newestFirst(bob)) {
				t.Fatalf("bob lists (%s) %v, want %v", q, got, newestFirst(bob))
			}
		}
		for _, id := range []string{alice[0], own.ID} {
			for _, c := range []struct{ method, path string }{
				{"GET", "/v1/messages/batches/" + id},
				{"GET", "/v1/messages/batches/" + id + "/results"},
				{"POST", "/v1/messages/batches/" + id + "/cancel"},
				{"DELETE", "/v1/messages/batches/" + id},
			} {
				assertBatchNotFound(t, ts.URL, c.method, c.path, "bob-key")
			}
		}
		// Paging towards newer batches, from alice's oldest: her others,
		// pages newest first, each next to the cursor.
		var newer []string
		cursor := alice[0]
		for range 20 {
			status, body := batchCall(t, ts.URL, "GET", "/v1/messages/batches?limit=2&before_id="+cursor, "", "alice-key")
			var page struct {
				Data    []struct{ ID string }
				HasMore bool    `json:"has_more"`
				FirstID *string `json:"first_id"`
			}
			if status != 200 || json.Unmarshal([]byte(body), &page) != nil {
				t.Fatalf("before_id page: %d %s", status, body)
			}
			var ids []string
			for _, d := range page.Data {
				ids = append(ids, d.ID)
			}
			newer = append(newer, newestFirst(ids)...) // oldest first
			if !page.HasMore {
				break
			}
			cursor = *page.FirstID
		}
		if want := alice[1:]; !slices.Equal(newer, want) {
			t.Fatalf("alice pages towards newer: %v, want %v", newer, want)
		}
		// Bob cannot page from alice's batch either.
		if status, body := batchCall(t, ts.URL, "GET", "/v1/messages/batches?after_id="+alice[0], "", "bob-key"); status != 400 || !strings.Contains(body, "invalid_request_error") {
			t.Fatalf("bob pages from alice's batch: %d %s", status, body)
		}
		for _, p := range []string{"/v1/messages/batches/", "/budget/60000/v1/messages/batches/", "//v1/messages//batches/"} {
			if status, body := batchCall(t, ts.URL, "GET", p+alice[0], "", "alice-key"); status != 200 || !strings.Contains(body, alice[0]) {
				t.Fatalf("alice reads her batch at %s: %d %s", p, status, body)
			}
			assertBatchNotFound(t, ts.URL, "GET", p+alice[0], "bob-key")
		}
		// An escaped dot segment never reaches another batch: refused
		// before any owner check (TestDotSegmentsRefusedWithHeldKeys).
		if status, body := batchCall(t, ts.URL, "GET", "/v1/messages/batches/"+alice[0]+"%2F..%2F"+bob[0], "", "alice-key"); status != 400 || !strings.Contains(body, "invalid_request_error") {
			t.Fatalf("a dot segment after alice's batch: %d %s", status, body)
		}
	}
	check(ts)

	// After a restart on the same database, ownership holds.
	ts.Close()
	db.Close()
	ts, db = start()
	defer db.Close()
	defer ts.Close()
	check(ts)

	// Alice acts on her own batches; bob's view is unchanged.
	waitEnded(t, ts.URL, alice[1], "alice-key")
	if status, body := batchCall(t, ts.URL, "GET", "/v1/messages/batches/"+alice[1]+"/results", "", "alice-key"); status != 200 || !strings.Contains(body, `"custom_id":"a"`) {
		t.Fatalf("alice's results: %d %s", status, body)
	}
	if status, body := batchCall(t, ts.URL, "DELETE", "/v1/messages/batches/"+alice[1], "", "alice-key"); status != 200 {
		t.Fatalf("alice deletes her batch: %d %s", status, body)
	}
	if got := listIDs(t, ts.URL, "bob-key", ""); len(got) != len(bob) {
		t.Fatalf("bob lists %v", got)
	}
}

// assertBatchNotFound checks that method path answers 404 not_found_error
// in the API's envelope.
func assertBatchNotFound(t *testing.T, base, method, path, key string) {
	t.Helper()
	status, body := batchCall(t, base, method, path, "", key)
	var env struct {
		Type  string
		Error struct{ Type string }
	}
	if status != 404 || json.Unmarshal([]byte(body), &env) != nil || env.Type != "error" || env.Error.Type != "not_found_error" {
		t.Fatalf("%s %s as %s: %d %s", method, path, key, status, body)
	}
}

// waitEnded polls a batch until its processing has ended.
func waitEnded(t *testing.T, base, id, key string) {
	t.Helper()
	for range 1000 {
		_, body := batchCall(t, base, "GET", "/v1/messages/batches/"+id, "", key)
		if strings.Contains(body, `"processing_status":"ended"`) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("batch %s did not end", id)
}
