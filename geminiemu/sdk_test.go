package geminiemu_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/providertest"
)

// start serves em on loopback and returns a genai client of key for it.
func start(t *testing.T, em *geminiemu.Server, key string) (*genai.Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	return client(t, srv, key), srv
}

func client(t *testing.T, srv *httptest.Server, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSDKGenerate: the SDK's sync and streamed calls, in both tiers, and
// a flex call shed.
func TestSDKGenerate(t *testing.T) {
	shed := 0
	em := &geminiemu.Server{Keys: []string{"k1"}, RetryDelay: 48 * time.Second,
		Shed: func(string) int { return shed }}
	c, _ := start(t, em, "k1")
	ctx := t.Context()
	resp, err := c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("What is the capital of France?"),
		&genai.GenerateContentConfig{ServiceTier: genai.ServiceTierFlex, SystemInstruction: genai.NewContentFromText("be brief", genai.RoleUser)})
	if err != nil {
		t.Fatal(err)
	}
	u := resp.UsageMetadata
	if resp.Text() != "Answer to: What is the capital of France?" || u.PromptTokenCount != 8 || u.CandidatesTokenCount != 8 ||
		u.ThoughtsTokenCount != 16 || u.TotalTokenCount != 32 || resp.ModelVersion != "gemini-2.5-flash" {
		t.Errorf("answer %q, usage %+v, model %q", resp.Text(), u, resp.ModelVersion)
	}
	if tier := resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier"); tier != "flex" {
		t.Errorf("served tier %q", tier)
	}
	// The same system instruction again: read from the implicit cache.
	resp, err = c.Models.GenerateContent(ctx, "gemini-2.0-flash", genai.Text("again"),
		&genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("be brief", genai.RoleUser)})
	if err != nil || resp.UsageMetadata.CachedContentTokenCount != 0 || resp.UsageMetadata.ThoughtsTokenCount != 0 {
		t.Errorf("another model: %+v, %v", resp.UsageMetadata, err)
	}
	resp, err = c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("again"),
		&genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("be brief", genai.RoleUser)})
	if err != nil || resp.UsageMetadata.CachedContentTokenCount != 2 {
		t.Errorf("cached: %+v, %v", resp.UsageMetadata, err)
	}
	var text strings.Builder
	chunks := 0
	for r, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-pro", genai.Text("Tell me a story."), nil) {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(r.Text())
		chunks++
	}
	if text.String() != "Answer to: Tell me a story." || chunks != 6 {
		t.Errorf("streamed %q in %d chunks", text.String(), chunks)
	}
	shed = http.StatusServiceUnavailable
	_, err = c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("shed me"), &genai.GenerateContentConfig{ServiceTier: genai.ServiceTierFlex})
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != 503 || ae.Status != "UNAVAILABLE" || len(ae.Details) != 1 || ae.Details[0]["retryDelay"] != "48s" {
		t.Errorf("shed: %v", err)
	}
	if st := em.Stats(); st.Shed != 1 || st.Billed["shed me"] != 0 {
		t.Errorf("stats %+v", st)
	}
	ct, err := c.Models.CountTokens(ctx, "gemini-2.5-flash", genai.Text("three words here"), nil)
	if err != nil || ct.TotalTokens != 3 {
		t.Errorf("countTokens %+v, %v", ct, err)
	}
	if m, err := c.Models.Get(ctx, "gemini-2.5-pro", nil); err != nil || m.Name != "models/gemini-2.5-pro" {
		t.Errorf("model %+v, %v", m, err)
	}
	_, err = c.Models.GenerateContent(ctx, "gemini-9-ultra", genai.Text("hi"), nil)
	if !errors.As(err, &ae) || ae.Code != 404 || ae.Status != "NOT_FOUND" {
		t.Errorf("unknown model: %v", err)
	}
}

// TestSDKBatches: inline and file batches through the SDK: create, get,
// list, results (inline and the responses file), cancel, delete, and
// isolation between keys.
func TestSDKBatches(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC))
	em := &geminiemu.Server{Clock: clock, BatchPending: time.Minute, BatchTurnaround: time.Hour}
	c, srv := start(t, em, "k1")
	ctx := t.Context()
	src := &genai.BatchJobSource{InlinedRequests: []*genai.InlinedRequest{
		{Contents: genai.Text("first"), Metadata: map[string]string{"key": "a"}},
		{Contents: genai.Text("please fail [error:INVALID_ARGUMENT]"), Metadata: map[string]string{"key": "b"}},
	}}
	job, err := c.Batches.Create(ctx, "gemini-2.5-flash", src, &genai.CreateBatchJobConfig{DisplayName: "lfb_1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(job.Name, "batches/") || job.State != genai.JobStatePending || job.DisplayName != "lfb_1" ||
		job.Model != "models/gemini-2.5-flash" {
		t.Errorf("created %+v", job)
	}
	clock.Advance(2 * time.Minute)
	if job, _ = c.Batches.Get(ctx, job.Name, nil); job.State != genai.JobStateRunning {
		t.Errorf("after 2 min: %s", job.State)
	}
	clock.Advance(time.Hour)
	job, err = c.Batches.Get(ctx, job.Name, nil)
	if err != nil || job.State != genai.JobStateSucceeded || job.Dest == nil || len(job.Dest.InlinedResponses) != 2 {
		t.Fatalf("ended: %+v, %v", job, err)
	}
	ok, bad := job.Dest.InlinedResponses[0], job.Dest.InlinedResponses[1]
	if ok.Response.Text() != "Answer to: first" || ok.Metadata["key"] != "a" || bad.Error == nil || bad.Metadata["key"] != "b" {
		t.Errorf("responses %+v / %+v", ok, bad)
	}

	// A file batch: upload, create, read the responses file.
	lines := `{"key":"x","request":{"contents":[{"role":"user","parts":[{"text":"from a file"}]}]}}` + "\n"
	f, err := c.Files.Upload(ctx, strings.NewReader(lines), &genai.UploadFileConfig{MIMEType: "application/jsonl", DisplayName: "in"})
	if err != nil {
		t.Fatal(err)
	}
	fjob, err := c.Batches.Create(ctx, "gemini-2.5-flash", &genai.BatchJobSource{FileName: f.Name}, &genai.CreateBatchJobConfig{DisplayName: "lfb_2"})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	fjob, err = c.Batches.Get(ctx, fjob.Name, nil)
	if err != nil || fjob.State != genai.JobStateSucceeded || fjob.Dest == nil || fjob.Dest.FileName == "" {
		t.Fatalf("file batch %+v, %v", fjob, err)
	}
	rf, err := c.Files.Get(ctx, fjob.Dest.FileName, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Files.Download(ctx, genai.NewDownloadURIFromFile(rf), nil)
	if err != nil || !bytes.Contains(out, []byte(`"key":"x"`)) || !bytes.Contains(out, []byte("Answer to: from a file")) {
		t.Errorf("responses file %s, %v", out, err)
	}
	res, err := http.Get(srv.URL + "/download/v1beta/" + fjob.Dest.FileName + ":download?alt=media&key=k1")
	if err != nil || res.StatusCode != 200 {
		t.Errorf("download by the recorded path: %v %v", res, err)
	}

	// List, newest first; cancel; delete; another key sees nothing.
	page, err := c.Batches.List(ctx, &genai.ListBatchJobsConfig{PageSize: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != fjob.Name || page.NextPageToken == "" {
		t.Errorf("list %+v, %v", page, err)
	}
	cjob, _ := c.Batches.Create(ctx, "gemini-2.5-flash", src, &genai.CreateBatchJobConfig{DisplayName: "lfb_3"})
	if err := c.Batches.Cancel(ctx, cjob.Name, nil); err != nil {
		t.Fatal(err)
	}
	if cjob, _ = c.Batches.Get(ctx, cjob.Name, nil); cjob.State != genai.JobStateCancelled {
		t.Errorf("cancelled: %s", cjob.State)
	}
	if err := c.Batches.Cancel(ctx, cjob.Name, nil); err == nil {
		t.Error("an ended batch cancelled")
	}
	other := client(t, srv, "k2")
	var ae genai.APIError
	if _, err := other.Batches.Get(ctx, job.Name, nil); !errors.As(err, &ae) || ae.Code != 404 {
		t.Errorf("another key's batch: %v", err)
	}
	if _, err := other.Files.Get(ctx, f.Name, nil); !errors.As(err, &ae) || ae.Code != 403 {
		t.Errorf("another key's file: %v", err)
	}
	if _, err := c.Batches.Delete(ctx, job.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Batches.Get(ctx, job.Name, nil); !errors.As(err, &ae) || ae.Code != 404 {
		t.Errorf("deleted batch: %v", err)
	}
}

// TestSDKUnderPrefix: mounted under a path, the emulator serves the SDK
// pointed at that path, the resumable upload included.
func TestSDKUnderPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/gemini/", http.StripPrefix("/gemini", &geminiemu.Server{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/gemini"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Models.GenerateContent(t.Context(), "gemini-2.5-flash", genai.Text("hi"), nil); err != nil || resp.Text() != "Answer to: hi" {
		t.Fatalf("generate: %v", err)
	}
	f, err := c.Files.Upload(t.Context(), strings.NewReader("{}\n"), &genai.UploadFileConfig{MIMEType: "application/jsonl"})
	if err != nil || !strings.HasPrefix(f.URI, srv.URL+"/gemini/v1beta/files/") {
		t.Fatalf("upload: %+v, %v", f, err)
	}
}
