package proxy_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// heldGeminiProxy is a proxy with proxy-held keys for the clients of
// keys ka and kb: the Gemini key gk upstream.
func heldGeminiProxy() *proxy.Server {
	clients := map[string]bool{"ka": true, "kb": true}
	return &proxy.Server{
		Credentials: func(p llmfleet.Credential) (llmfleet.Credential, bool) {
			return llmfleet.Credential{APIKey: "anthropic"}, clients[p.APIKey]
		},
		GeminiCredentials: func(p llmfleet.Credential) (llmfleet.Credential, bool) {
			return llmfleet.Credential{APIKey: "gk"}, clients[p.APIKey]
		},
	}
}

// TestGeminiFaceHeldKeys: with proxy-held keys, clients call the Gemini
// face with keys of their own and the proxy's Gemini key goes upstream;
// each client's batches and files are its own (another's are 404, and
// absent from its lists); what the key keeps otherwise is refused; an
// unknown key is refused in Google's envelope.
func TestGeminiFaceHeldKeys(t *testing.T) {
	srv := heldGeminiProxy()
	st := newGeminiStack(t, &geminiemu.Server{Keys: []string{"gk"}, BatchTurnaround: time.Hour}, srv)
	ctx := t.Context()
	a, b := st.client(t, "ka", "", nil), st.client(t, "kb", "", nil)
	if resp, err := a.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text(geminiPrompt), nil); err != nil || resp.Text() != geminiAnswer {
		t.Fatalf("sync under the held key: %v", err)
	}
	lines := `{"key":"x","request":{"contents":[{"role":"user","parts":[{"text":"from a file"}]}]}}` + "\n"
	f, err := a.Files.Upload(ctx, strings.NewReader(lines), &genai.UploadFileConfig{MIMEType: "application/jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := a.Batches.Create(ctx, "gemini-2.5-flash", &genai.BatchJobSource{FileName: f.Name}, &genai.CreateBatchJobConfig{DisplayName: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Batches.Get(ctx, job.Name, nil); err != nil {
		t.Errorf("owner reads its batch: %v", err)
	}
	if _, err := a.Files.Get(ctx, f.Name, nil); err != nil {
		t.Errorf("owner reads its file: %v", err)
	}
	page, err := a.Batches.List(ctx, nil)
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != job.Name {
		t.Errorf("owner's list %+v, %v", page.Items, err)
	}
	notFound := func(what string, err error) {
		var ae genai.APIError
		if !errors.As(err, &ae) || ae.Code != http.StatusNotFound || ae.Status != "NOT_FOUND" {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err = b.Batches.Get(ctx, job.Name, nil)
	notFound("another's batch", err)
	notFound("another's cancel", b.Batches.Cancel(ctx, job.Name, nil))
	_, err = b.Files.Get(ctx, f.Name, nil)
	notFound("another's file", err)
	_, err = b.Batches.Create(ctx, "gemini-2.5-flash", &genai.BatchJobSource{FileName: f.Name}, &genai.CreateBatchJobConfig{DisplayName: "theirs"})
	notFound("a batch of another's file", err)
	if page, err := b.Batches.List(ctx, nil); err != nil || len(page.Items) != 0 {
		t.Errorf("another's list %+v, %v", page.Items, err)
	}
	if page, err := b.Files.List(ctx, nil); err != nil || len(page.Items) != 0 {
		t.Errorf("another's file list %+v, %v", page.Items, err)
	}
	if _, err := b.Models.Get(ctx, "gemini-2.5-flash", nil); err != nil {
		t.Errorf("models are shared: %v", err)
	}
	var ae genai.APIError
	_, err = b.Caches.List(ctx, nil)
	if !errors.As(err, &ae) || ae.Code != http.StatusForbidden || ae.Status != "PERMISSION_DENIED" {
		t.Errorf("cached contents under the shared key: %v", err)
	}
	_, err = st.client(t, "stranger", "", nil).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), nil)
	if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || ae.Status != "INVALID_ARGUMENT" {
		t.Errorf("unknown key: %v", err)
	}
}

// TestGeminiFaceHeldKeyTickets: with proxy-held keys, a Gemini call's
// ticket reads for the client that made it (its request is stored under
// the proxy's Gemini key) and is 404 for another client.
func TestGeminiFaceHeldKeyTickets(t *testing.T) {
	srv := heldGeminiProxy()
	srv.ClientName = func(p llmfleet.Credential) string { return p.APIKey }
	st := newGeminiStack(t, &geminiemu.Server{Keys: []string{"gk"}}, srv, true)
	req, _ := http.NewRequest("POST", st.ts.URL+"/gemini/v1beta/models/gemini-2.5-flash:generateContent",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"`+geminiPrompt+`"}]}]}`))
	req.Header.Set("x-goog-api-key", "ka")
	req.Header.Set("Prefer", "respond-async")
	res, err := st.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get(proxy.HeaderRequestID)
	if res.StatusCode != http.StatusAccepted || id == "" {
		t.Fatalf("respond-async: %d, id %q", res.StatusCode, id)
	}
	code, body := st.awaitTicket(t, id, "ka")
	if code != http.StatusOK || !strings.Contains(body, geminiAnswer) {
		t.Errorf("the owner's ticket: %d %s", code, body)
	}
	if code, body := st.readTicket(t, id, "kb"); code != http.StatusNotFound || !strings.Contains(body, `"status":"NOT_FOUND"`) {
		t.Errorf("another client's read: %d %s", code, body)
	}
}

// TestHeldGeminiUploadSessionIsItsClients: with proxy-held keys, a
// resumable upload's session belongs to the client that began it. Before,
// a client that had another's session URL (its upload_id) could send the
// last chunk to it and finalize it: the file made of the other client's
// bytes was then recorded as the sender's, who could read it. The session
// URL is followed as given, as clients other than the Go SDK do (which
// puts its base URL's host in it): it used to name the upstream's host.
func TestHeldGeminiUploadSessionIsItsClients(t *testing.T) {
	srv := heldGeminiProxy()
	st := newGeminiStack(t, &geminiemu.Server{Keys: []string{"gk"}}, srv)
	do := func(key, url, command, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("X-Goog-Api-Key", key)
		req.Header.Set("X-Goog-Upload-Protocol", "resumable")
		req.Header.Set("X-Goog-Upload-Command", command)
		if command == "start" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Goog-Upload-Header-Content-Type", "text/plain")
		} else {
			req.Header.Set("X-Goog-Upload-Offset", "0")
		}
		resp, err := st.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	start := do("ka", st.ts.URL+proxy.GeminiPrefix+"/upload/v1beta/files", "start", `{"file":{"displayName":"alice's notes"}}`)
	session := start.Header.Get("X-Goog-Upload-Url")
	if start.StatusCode != http.StatusOK || !strings.HasPrefix(session, st.ts.URL+proxy.GeminiPrefix+"/upload/") || !strings.Contains(session, "upload_id=") {
		t.Fatalf("start: %d, session %q", start.StatusCode, session)
	}
	if resp := do("kb", session, "upload, finalize", "alice's secret notes"); resp.StatusCode != http.StatusNotFound {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("kb finalized ka's upload session: %d %s, want 404", resp.StatusCode, b)
	}
	resp := do("ka", session, "upload, finalize", "alice's secret notes")
	var done struct {
		File struct{ Name string } `json:"file"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&done); resp.StatusCode != http.StatusOK || err != nil || done.File.Name == "" {
		t.Fatalf("ka finalizes her own upload: %d, %v", resp.StatusCode, err)
	}
	ctx := t.Context()
	if _, err := st.client(t, "ka", "", nil).Files.Get(ctx, done.File.Name, nil); err != nil {
		t.Errorf("ka reads the file she uploaded: %v", err)
	}
	var ae genai.APIError
	if _, err := st.client(t, "kb", "", nil).Files.Get(ctx, done.File.Name, nil); !errors.As(err, &ae) || ae.Code != http.StatusNotFound {
		t.Errorf("kb reads ka's file: %v, want 404", err)
	}
}
