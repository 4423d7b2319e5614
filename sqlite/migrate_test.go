package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// schema2 creates a database at path as llmfleet wrote it at schema
// version 2, and runs setup on it.
func schema2(t *testing.T, path string, setup string) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, m := range ms[:2] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := raw.Exec("PRAGMA user_version = 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(setup); err != nil {
		t.Fatal(err)
	}
}

// TestSchema2Rows opens a database written by schema 2 and reads its
// rows: an answer as a success, a rendered error envelope as a provider
// error, and a batch without a create deadline.
func TestSchema2Rows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	at := time.Date(2026, 3, 1, 12, 0, 0, 5, time.UTC)
	n := strconv.FormatInt(at.UnixNano(), 10)
	schema2(t, path, `
		INSERT INTO batches (id, provider, credential_id, state, size, intent_at)
			VALUES ('lfb_1', 'anthropic', 'cred_a', 'intent', 1, `+n+`);
		INSERT INTO requests (id, provider, credential_id, body, model, budget, accepted_at, state,
			status_code, result_body, usage, completed_at) VALUES
			('lfr_ok', 'anthropic', 'cred_a', X'7B7D', 'm', 0, `+n+`, 'done', 200, CAST('{"id":"msg_1"}' AS BLOB), X'7B7D', `+n+`),
			('lfr_err', 'anthropic', 'cred_a', X'7B7D', 'm', 0, `+n+`, 'done', 529,
				CAST('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_9"}' AS BLOB),
				X'7B7D', `+n+`),
			('lfr_html', 'anthropic', 'cred_a', X'7B7D', 'm', 0, `+n+`, 'done', 502, CAST('<html>' AS BLOB), X'7B7D', `+n+`);
		INSERT INTO requests (id, provider, credential_id, body, model, budget, accepted_at, state, batch_id, custom_id)
			VALUES ('lfr_sub', 'anthropic', 'cred_a', X'7B7D', 'm', 0, `+n+`, 'submitted', 'lfb_1', 'r0');`)

	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	d := &DB{Path: path}
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.SchemaVersion(t.Context()); err != nil || v != len(ms) {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, len(ms))
	}
	get := func(id string) *llmfleet.StoredResult {
		t.Helper()
		r, err := d.GetRequest(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Result == nil || !r.Result.CompletedAt.Equal(at) {
			t.Fatalf("%s: result %+v", id, r.Result)
		}
		return r.Result
	}
	if res := get("lfr_ok"); res.StatusCode != 200 || string(res.Body) != `{"id":"msg_1"}` || res.Err != nil {
		t.Errorf("success from schema 2: %+v", res)
	}
	res := get("lfr_err")
	if res.StatusCode != 529 || res.Body != nil || res.Err == nil {
		t.Fatalf("error from schema 2: %+v", res)
	}
	e := *res.Err
	if e.Kind != llmfleet.KindProvider || e.StatusCode != 529 || e.Type != "overloaded_error" ||
		e.Message != "Overloaded" || e.RequestID != "req_9" || !bytes.HasPrefix(e.Body, []byte(`{"type":"error"`)) {
		t.Errorf("error from schema 2: Err %+v", e)
	}
	res = get("lfr_html")
	if res.Err == nil || res.Err.Kind != llmfleet.KindProvider || res.Err.StatusCode != 502 ||
		string(res.Err.Body) != "<html>" || res.Err.Type != "" || res.Body != nil {
		t.Errorf("non-JSON error from schema 2: %+v, Err %+v", res, res.Err)
	}

	_, pb, err := d.Pending(t.Context())
	if err != nil || len(pb) != 1 {
		t.Fatalf("Pending = %d batches, %v", len(pb), err)
	}
	if b := pb[0].Batch; !b.CreateDeadline.IsZero() || !b.IntentAt.Equal(at) || len(pb[0].Requests) != 1 {
		t.Errorf("batch from schema 2: %+v, %d requests", b, len(pb[0].Requests))
	}
	// The old rows live on with the new ones.
	_, err = d.CompleteRequests(t.Context(), []llmfleet.Completion{{RequestID: "lfr_sub",
		Result: &llmfleet.StoredResult{StatusCode: 500, Err: &llmfleet.ResultError{Kind: llmfleet.KindMissing}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.GetRequest(t.Context(), "lfr_sub")
	if err != nil || r.Result == nil || r.Result.Err == nil || r.Result.Err.Kind != llmfleet.KindMissing {
		t.Errorf("request completed after the migration: %+v, %v", r, err)
	}
}
