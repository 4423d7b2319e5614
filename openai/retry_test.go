package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// waits is the real clock but for its waits, which it records and does
// not wait.
type waits struct {
	llmfleet.RealClock
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once.
func (w *waits) Sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.d)
}

// creates counts the batch creates (POST /v1/batches) an upstream gets.
type creates struct {
	next http.Handler
	n    atomic.Int64
}

func (c *creates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/batches" {
		c.n.Add(1)
	}
	c.next.ServeHTTP(w, r)
}

// firstFaults returns a Fault hook answering each path's first request
// with the fault it names, and every other request normally.
func firstFaults(faults map[string]int) func(string) (int, string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(path string) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		status, ok := faults[path]
		if !ok || seen[path] {
			return 0, ""
		}
		seen[path] = true
		if status == http.StatusTooManyRequests {
			return status, "rate_limit_exceeded"
		}
		return status, "server_error"
	}
}

// TestCreateBatchRetried: the upload of a batch's input dropped once and
// its create refused once with 429 and Retry-After are retried (after the
// wait the 429 asked for): the batch goes out once, and every pooled
// caller gets its own answer, billed once.
func TestCreateBatchRetried(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond, FaultRetryAfter: 2 * time.Second,
		Fault: firstFaults(map[string]int{"/v1/files": openaiemu.DropConnection, "/v1/batches": http.StatusTooManyRequests})}
	up := &creates{next: emu}
	srv := httptest.NewServer(up)
	defer srv.Close()
	w := &waits{}
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{&openai.Provider{BaseURL: srv.URL, Clock: w}},
		Policy: dispatch.Policy{BatchWindow: time.Hour, BatchMinSize: 3, PollInterval: 20 * time.Millisecond,
			SyncLatencyPrior: time.Second, NoRescue: true}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	prompts := []string{"pooled one", "pooled two", "pooled three"}
	var wg sync.WaitGroup
	for _, p := range prompts {
		wg.Go(func() {
			resp, err := d.SubmitBatch(t.Context(), 0, &llmfleet.Request{Provider: "openai",
				Credential: llmfleet.Credential{APIKey: "sk-a"}, Body: chat("gpt-4.1", p)})
			if err != nil {
				t.Errorf("%s: %v", p, err)
				return
			}
			var cc struct {
				Choices []struct{ Message struct{ Content string } }
			}
			if json.Unmarshal(resp.Body, &cc) != nil || len(cc.Choices) != 1 || cc.Choices[0].Message.Content != "Answer to: "+p {
				t.Errorf("%s: %s", p, resp.Body)
			}
		})
	}
	wg.Wait()
	if n := up.n.Load(); n != 2 {
		t.Errorf("%d creates sent, want 2 (one refused, one made)", n)
	}
	if n := d.Stats().BatchesSubmitted; n != 1 {
		t.Errorf("%d batches, want 1", n)
	}
	page, err := (&openai.Provider{BaseURL: srv.URL}).ListBatches(t.Context(), llmfleet.Credential{APIKey: "sk-a"}, "", 100)
	if err != nil || len(page.Batches) != 1 {
		t.Errorf("the upstream holds %+v, %v: want one batch", page, err)
	}
	for _, p := range prompts {
		if n := emu.Stats().Billed[p]; n != 1 {
			t.Errorf("%q billed %d times", p, n)
		}
	}
	if got := w.all(); len(got) != 2 || !slices.Contains(got, 2*time.Second) {
		t.Errorf("waits %v: want a backoff after the drop and the 2s the 429 asked for", got)
	}
}

// TestCreateBatchNotRetried: what must not be sent again is not: a create
// written and never answered, or answered 5xx (it may have made the
// batch: uncertain); a create or an upload refused for good (an exhausted
// quota, x-should-retry: false); a retry whose wait would outlast the
// call.
func TestCreateBatchNotRetried(t *testing.T) {
	quota := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`))
	}
	cases := []struct {
		name      string
		path      string
		fault     func(w http.ResponseWriter, r *http.Request)
		deadline  time.Duration
		uncertain bool
		status    int
	}{
		{name: "create dropped after it was written", path: "/v1/batches", uncertain: true,
			fault: func(w http.ResponseWriter, r *http.Request) { hangUp(w) }},
		{name: "create answered 503", path: "/v1/batches", uncertain: true, status: 503,
			fault: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "{}", http.StatusServiceUnavailable) }},
		{name: "create out of quota", path: "/v1/batches", status: 429, fault: func(w http.ResponseWriter, r *http.Request) { quota(w) }},
		{name: "upload told not to retry", path: "/v1/files", status: 503, fault: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Should-Retry", "false")
			http.Error(w, "{}", http.StatusServiceUnavailable)
		}},
		{name: "wait past the deadline", path: "/v1/files", status: 429, deadline: time.Hour, fault: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7200")
			http.Error(w, "{}", http.StatusTooManyRequests)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			emu := &openaiemu.Server{}
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == c.path {
					hits.Add(1)
					c.fault(w, r)
					return
				}
				emu.ServeHTTP(w, r)
			}))
			defer srv.Close()
			w := &waits{}
			p := &openai.Provider{BaseURL: srv.URL, Clock: w}
			ctx := t.Context()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.deadline)
				defer cancel()
			}
			_, err := p.CreateBatch(ctx, llmfleet.Credential{APIKey: "sk-a"}, "lfb_x", nil,
				[]llmfleet.BatchItem{{CustomID: "lfb_x-0", Params: chat("gpt-4.1", "x")}})
			var ue *llmfleet.UncertainError
			var pe *llmfleet.Error
			switch {
			case hits.Load() != 1 || len(w.all()) != 0:
				t.Errorf("%d attempts, waits %v: want one attempt", hits.Load(), w.all())
			case errors.As(err, &ue) != c.uncertain:
				t.Errorf("uncertain %v: %v", !c.uncertain, err)
			case c.status != 0 && (!errors.As(err, &pe) || pe.StatusCode != c.status):
				t.Errorf("%v, want the %d answer", err, c.status)
			}
		})
	}
}
