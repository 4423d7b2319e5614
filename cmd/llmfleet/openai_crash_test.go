package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// heldCreate is an OpenAI upstream whose first batch create is held: it
// is read whole, then waits for release before the emulator makes the
// batch (its caller, by then, gone). It counts every batch create.
type heldCreate struct {
	emu     http.Handler
	creates atomic.Int64
	entered chan struct{} // closed once the first create is held
	release chan struct{} // closed by the test to let it be made
	made    chan struct{} // closed once it is made
}

func (h *heldCreate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/batches" || h.creates.Add(1) != 1 {
		h.emu.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	close(h.entered)
	<-h.release
	r2 := r.Clone(context.Background())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	h.emu.ServeHTTP(httptest.NewRecorder(), r2)
	close(h.made)
}

// TestCrashRetryOpenAIWithIdempotencyKey: callers of the OpenAI face,
// each with an Idempotency-Key, are cut off when the real binary is
// killed (SIGKILL) while the create of their batch is delayed upstream;
// the create lands after the crash. They retry against a serve restarted
// on the same database: each gets the answer to its own prompt, the
// batch was created once, and every prompt was billed once.
func TestCrashRetryOpenAIWithIdempotencyKey(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs)
			t.Logf("logs of the processes:\n%s", b)
		}
	})
	emu := &openaiemu.Server{BatchTurnaround: 200 * time.Millisecond}
	up := &heldCreate{emu: emu, entered: make(chan struct{}), release: make(chan struct{}), made: make(chan struct{})}
	upTS := httptest.NewServer(up)
	defer upTS.Close()
	anth := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }, Logger: slog.New(slog.DiscardHandler)})
	defer anth.Close()
	const n = 6
	serve := func() *process {
		return start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", anth.URL, "--openai-url", upTS.URL,
			"--db", filepath.Join(dir, "db"), "--secret-file", filepath.Join(dir, "secret"), "--batch-min-size", fmt.Sprint(n),
			"--batch-window", "30s", "--poll-interval", "50ms", "--max-poll-interval", "100ms", "--create-timeout", "5s")
	}
	key := "sk-crash-" + llmfleet.NewID("")
	ask := func(ctx context.Context, base string, i int) (*openai.ChatCompletion, error) {
		c := openai.NewClient(option.WithBaseURL(base+"/openai/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
		return c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4.1",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("crash prompt %d", i))}},
			option.WithHeader("llmfleet-route", "batch"), option.WithHeader("Idempotency-Key", fmt.Sprintf("crash-key-%d", i)))
	}

	s := serve()
	cut := make(chan error, n)
	for i := range n {
		go func() {
			res, err := ask(t.Context(), s.url, i)
			if err == nil {
				err = fmt.Errorf("answered before the crash: %q", res.Choices[0].Message.Content)
			}
			cut <- err
		}()
	}
	select {
	case <-up.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the batch create never reached the upstream")
	}
	s.kill()
	for range n {
		var ae *openai.Error
		if err := <-cut; err == nil || errors.As(err, &ae) { // an answer, not a lost connection
			t.Fatalf("a caller was not cut off by the crash: %v", err)
		}
	}
	close(up.release)
	<-up.made // the create lands after the crash

	s = serve()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := ask(t.Context(), s.url, i)
			if want := fmt.Sprintf("Answer to: crash prompt %d", i); err != nil || res.Choices[0].Message.Content != want {
				t.Errorf("caller %d retrying after the restart: %v", i, err)
			}
		})
	}
	wg.Wait()
	if c := up.creates.Load(); c != 1 {
		t.Errorf("%d batch creates, want 1", c)
	}
	for i := range n {
		if b := emu.Stats().Billed[fmt.Sprintf("crash prompt %d", i)]; b != 1 {
			t.Errorf("crash prompt %d billed %d times", i, b)
		}
	}
}
