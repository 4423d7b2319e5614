package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// A caller cut off by a crash of the real binary while its batched
// request is in flight retries with its Idempotency-Key after the
// restart: it gets its own answer, and the prompt went upstream once.
func TestCrashRetryWithIdempotencyKey(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	c := &crashClient{t: t, key: "sk-ant-api03-idem-" + llmfleet.NewID("")}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs)
			t.Logf("logs of the processes:\n%s", b)
		}
	})
	emu := start(t, bin, logs, "emulate", "--listen", "127.0.0.1:0", "--turnaround", "2s")
	db := filepath.Join(dir, "llmfleet.db")
	serve := func() *process {
		return start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", emu.url,
			"--db", db, "--batch-window", "50ms", "--poll-interval", "50ms", "--max-poll-interval", "200ms", "--turnaround-prior", "2s")
	}
	const prompt = "idempotent after a crash"
	body := fmt.Sprintf(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":%q}]}`, prompt)
	hdr := []string{"llmfleet-route", "batch", "Idempotency-Key", "retry-me-1"}

	s := serve()
	cut := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", c.key)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %d before the crash", resp.StatusCode)
		}
		cut <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); c.stats(emu.url).SubmissionCounts()[prompt] == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached a batch")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill()
	if err := <-cut; err == nil || strings.Contains(err.Error(), "answered") {
		t.Fatalf("the caller was not cut off by the crash: %v", err)
	}

	s = serve()
	status, _, b := c.do("POST", s.url+"/v1/messages", body, hdr...)
	var msg struct{ Content []struct{ Text string } }
	json.Unmarshal(b, &msg)
	if status != http.StatusOK || len(msg.Content) != 1 || msg.Content[0].Text != "Answer to: "+prompt {
		t.Fatalf("retry after the restart: %d %s", status, b)
	}
	if n := c.stats(emu.url).SubmissionCounts()[prompt]; n != 1 {
		t.Fatalf("the prompt went upstream %d times", n)
	}
}
