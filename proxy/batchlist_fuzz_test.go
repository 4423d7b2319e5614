package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// roundTrip is an http.RoundTripper of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// prefixOwners owns every batch id by its prefix: "mine" is alice's,
// "theirs" bob's, the rest nobody's.
type prefixOwners struct{}

func (prefixOwners) RecordBatchOwner(context.Context, string, string) error { return nil }
func (prefixOwners) ForgetBatchOwner(context.Context, string) error         { return nil }

func (prefixOwners) BatchOwner(_ context.Context, id string) (string, error) {
	switch {
	case strings.HasPrefix(id, "mine"):
		return "alice", nil
	case strings.HasPrefix(id, "theirs"):
		return "bob", nil
	}
	return "", llmfleet.ErrNotFound
}

// FuzzBatchListFilter feeds arbitrary upstream pages to a client's list
// of batches in proxy-held-key mode: whatever upstream answers with 200,
// the client gets a well-formed list of its own batches only, or an
// error, never another client's batch id.
func FuzzBatchListFilter(f *testing.F) {
	f.Add(`{"data":[{"id":"mine1"},{"id":"theirs1"}],"has_more":false,"first_id":"mine1","last_id":"theirs1"}`, "")
	f.Add(`{"data":[{"id":"theirs1"},{"id":"msgbatch_x"}],"has_more":true,"first_id":"theirs1","last_id":"msgbatch_x"}`, "limit=1")
	f.Add(`{"data":[{"id":"mine2","id":"theirs2"}],"has_more":false}`, "before_id=mine0")
	f.Add(`theirs1`, "after_id=mine0&limit=2")
	f.Fuzz(func(t *testing.T, page, query string) {
		srv := &proxy.Server{
			Upstream:    &url.URL{Scheme: "http", Host: "upstream.invalid"},
			Credentials: func(llmfleet.Credential) (llmfleet.Credential, bool) { return llmfleet.Credential{APIKey: "up"}, true },
			Fingerprint: func(c llmfleet.Credential) string { return c.APIKey[:len(c.APIKey)-4] },
			BatchOwners: prefixOwners{},
			Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(page)), Request: r}, nil
			}),
		}
		req := httptest.NewRequest("GET", "/v1/messages/batches", nil)
		req.URL.RawQuery = query
		req.Header.Set("X-Api-Key", "alice-key")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != 200 {
			if strings.Contains(body, "theirs") && !strings.Contains(query, "theirs") {
				t.Fatalf("query %q, upstream %q: answered %d %s", query, page, rec.Code, body)
			}
			return
		}
		var out struct {
			Data    []struct{ ID string }
			HasMore bool    `json:"has_more"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(errors.Join(err, errors.New(body)))
		}
		for _, d := range out.Data {
			if !strings.HasPrefix(d.ID, "mine") {
				t.Fatalf("listed %q: %s", d.ID, body)
			}
		}
		if len(out.Data) == 0 && (out.HasMore || out.FirstID != nil || out.LastID != nil) ||
			len(out.Data) > 0 && (out.FirstID == nil || *out.FirstID != out.Data[0].ID || *out.LastID != out.Data[len(out.Data)-1].ID) {
			t.Fatalf("inconsistent page %s", body)
		}
	})
}
