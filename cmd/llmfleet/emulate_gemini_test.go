package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"testing"
	"time"

	"google.golang.org/genai"
)

// TestEmulateGeminiListener: emulate --gemini-addr serves the Gemini
// emulator on a listener of its own, which the genai SDK calls over
// loopback: a sync call, a stream, a flex call shed at
// --gemini-flex-shed 1 with the status and retry delay the flags set, and
// an inline batch ended after --gemini-turnaround.
func TestEmulateGeminiListener(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c, done := startGeminiEmulator(ctx, t, "--gemini-turnaround", "50ms", "--gemini-flex-shed", "1", "--gemini-flex-shed-status", "429",
		"--gemini-retry-delay", "48s")
	resp, err := c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), nil)
	if err != nil || resp.Text() != "Answer to: hi" || resp.UsageMetadata.PromptTokenCount != 1 {
		t.Fatalf("generate: %v %+v", err, resp)
	}
	var text string
	for r, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-pro", genai.Text("a story"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		text += r.Text()
	}
	if text != "Answer to: a story" {
		t.Errorf("streamed %q", text)
	}
	_, err = c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("shed me"), &genai.GenerateContentConfig{ServiceTier: genai.ServiceTierFlex})
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" || len(apiErr.Details) == 0 ||
		apiErr.Details[0]["retryDelay"] != "48s" {
		t.Errorf("shed flex call: %v %+v", err, apiErr)
	}
	job, err := c.Batches.Create(ctx, "gemini-2.5-flash", &genai.BatchJobSource{InlinedRequests: []*genai.InlinedRequest{
		{Contents: genai.Text("batched"), Metadata: map[string]string{"key": "q1"}}}}, &genai.CreateBatchJobConfig{DisplayName: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for job.State != genai.JobStateSucceeded {
		if job.State == genai.JobStateFailed || job.State == genai.JobStateCancelled || job.State == genai.JobStateExpired {
			t.Fatalf("batch %s", job.State)
		}
		time.Sleep(20 * time.Millisecond)
		if job, err = c.Batches.Get(ctx, job.Name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if rs := job.Dest.InlinedResponses; len(rs) != 1 || rs[0].Response.Text() != "Answer to: batched" {
		t.Errorf("batch answers %+v", rs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--gemini-flex-shed", "1.5"}, {"--gemini-flex-shed-status", "500"}, {"--gemini-turnaround", "-1s"},
		{"--gemini-flex-latency", "soon"}} {
		if err := runEmulate(t.Context(), append([]string{"--listen", "127.0.0.1:0"}, bad...), io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// --gemini-flex-latency, in the shape of --latency: the models it names
// wait their range, the others none.
func TestEmulateGeminiFlexLatency(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Flash, not named, answers well within pro's delay, however loaded
	// the machine.
	c, done := startGeminiEmulator(ctx, t, "--gemini-flex-latency", "gemini-2.5-pro=2s-2500ms")
	flex := &genai.GenerateContentConfig{ServiceTier: genai.ServiceTierFlex}
	for _, m := range []struct {
		model    string
		min, max time.Duration
	}{{"gemini-2.5-pro", 2 * time.Second, time.Minute}, {"gemini-2.5-flash", 0, 1500 * time.Millisecond}} {
		t0 := time.Now()
		resp, err := c.Models.GenerateContent(ctx, m.model, genai.Text("hi"), flex)
		if took := time.Since(t0); err != nil || took < m.min || took > m.max || resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier") != "flex" {
			t.Errorf("%s: %v in %s, %+v", m.model, err, took, resp)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// startGeminiEmulator runs emulate with --gemini-addr and args until ctx
// ends, and returns a genai client of its Gemini listener and the
// command's end.
func startGeminiEmulator(ctx context.Context, t *testing.T, args ...string) (*genai.Client, chan error) {
	t.Helper()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runEmulate(ctx, append([]string{"--listen", "127.0.0.1:0", "--gemini-addr", "127.0.0.1:0"}, args...), &out, &errOut)
	}()
	re := regexp.MustCompile(`gemini emulator listening on (http://\S+)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no gemini listener: %q %q", out.String(), errOut.String())
	}
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: addr}})
	if err != nil {
		t.Fatal(err)
	}
	return c, done
}
