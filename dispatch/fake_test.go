package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// fakeProvider is an in-memory provider for the dispatcher's unit tests.
// It runs on the time package's clock, which synctest bubbles fake.
type fakeProvider struct {
	mu         sync.Mutex
	turnaround func(model string) time.Duration // nil: 60s
	createErr  error                            // returned by the next CreateBatch
	lostAnswer int                              // creates that succeed but whose answer is lost
	lostCreate int                              // creates lost before the provider saw them
	resultsErr error                            // returned by every Results call
	pollErrs   int                              // fail this many GetBatch/ListBatches calls
	findErrs   int                              // fail this many FindBatch calls
	// answered503 makes the next create make its batch and answer 503.
	answered503 bool
	// landAfter makes the next create fail without an answer and make its
	// batch that long after (a create that lands late).
	landAfter time.Duration
	// createHang makes creates wait for their context to end and fail as
	// never delivered (a connect that never completes).
	createHang bool
	// createHeld, if set, holds the answer of a create that made its
	// batch until it is closed (a process paused while the create is
	// under way).
	createHeld chan struct{}
	// sendDelay is how long a sync call takes.
	sendDelay time.Duration
	// usage, if set, is the usage of answers (batch: of batch items);
	// nil: 10 input and 5 output tokens.
	usage func(batch bool) llmfleet.Usage
	// flexDelay, if set, is how long a flex call takes instead.
	flexDelay time.Duration
	// flexRefusals refuses that many flex calls for capacity (-1: all);
	// noFlex refuses the flex tier for every model.
	flexRefusals int
	noFlex       bool
	// failure makes every batch fail as a whole when it ends.
	failure *llmfleet.Error
	// onSend, if set, is called at the start of every Send.
	onSend func()
	// pollErr, if set, is returned by every GetBatch and ListBatches call.
	pollErr    error
	never      bool // batches never end
	maxReq     int
	batches    map[string]*fakeBatch
	order      []string
	calls      map[string]int
	syncBodies []string
	rng        *rand.Rand
}

type fakeBatch struct {
	b     llmfleet.Batch
	cred  string
	items []llmfleet.BatchItem
	ends  time.Time
}

func newFake() *fakeProvider {
	return &fakeProvider{batches: map[string]*fakeBatch{}, calls: map[string]int{}, rng: rand.New(rand.NewSource(1))}
}

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) Limits() llmfleet.BatchLimits {
	return llmfleet.BatchLimits{MaxRequests: f.maxReq, MaxBytes: 1 << 20}
}

// answer is the fake model's reply to a body.
func answerText(body []byte) string {
	var p struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &p)
	if len(p.Messages) == 0 {
		return ""
	}
	return "re: " + p.Messages[len(p.Messages)-1].Content
}

func message(body []byte) json.RawMessage {
	m, _ := json.Marshal(map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": modelOf(body),
		"content":     []any{map[string]any{"type": "text", "text": answerText(body)}},
		"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})
	return m
}

func (f *fakeProvider) Send(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	if f.onSend != nil {
		f.onSend()
	}
	f.mu.Lock()
	f.calls["send"]++
	f.syncBodies = append(f.syncBodies, string(req.Body))
	delay := f.sendDelay
	tier := llmfleet.TierStandard
	if req.Flex {
		f.calls["flex"]++
		switch {
		case f.noFlex:
			f.mu.Unlock()
			return nil, &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "no flex", Reason: llmfleet.ErrFlexUnsupported}
		case f.flexRefusals != 0:
			f.flexRefusals--
			f.mu.Unlock()
			return nil, &llmfleet.Error{StatusCode: 429, Type: "resource_unavailable", Message: "busy", Reason: llmfleet.ErrFlexUnavailable}
		}
		tier = llmfleet.TierFlex
		if f.flexDelay > 0 {
			delay = f.flexDelay
		}
	}
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &llmfleet.Response{StatusCode: 200, Body: message(req.Body), Model: modelOf(req.Body), Usage: f.usageOf(false), Tier: tier}, nil
}

func (f *fakeProvider) Stream(ctx context.Context, req *llmfleet.Request) (io.ReadCloser, error) {
	return nil, errors.New("not supported")
}

// modelOf reads the model of a request body; "" if it has none.
func modelOf(body []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Model
}

func (f *fakeProvider) Inspect(req *llmfleet.Request) (llmfleet.RequestInfo, error) {
	if !json.Valid(req.Body) {
		return llmfleet.RequestInfo{}, &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "not JSON"}
	}
	info := llmfleet.RequestInfo{Model: modelOf(req.Body), PoolKey: req.Header.Get("Anthropic-Beta")}
	info.Prompt, _ = claudewire.PromptOf(req.Body)
	return info, nil
}

// UpgradeTTL raises the cache TTLs of params, as the Anthropic adapter
// does.
func (f *fakeProvider) UpgradeTTL(params json.RawMessage) (json.RawMessage, int, error) {
	return claudewire.UpgradeTTL(params)
}

func (f *fakeProvider) BatchParams(req *llmfleet.Request) (json.RawMessage, error) {
	return jsonmember.Delete(req.Body, "stream")
}

// FindBatch finds a batch by the tag its custom_ids carry; it can read
// the tags of running batches too (as a provider with metadata can).
func (f *fakeProvider) FindBatch(ctx context.Context, cred llmfleet.Credential, q llmfleet.BatchQuery) (*llmfleet.Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["find"]++
	if f.findErrs > 0 {
		f.findErrs--
		return nil, &llmfleet.Error{StatusCode: 500, Type: "api_error", Message: "list failed"}
	}
	for _, id := range f.order {
		fb := f.batches[id]
		if fb.cred == cred.Fingerprint(nil) && strings.HasPrefix(fb.items[0].CustomID, q.Tag+"-") {
			b := f.viewLocked(fb)
			return &b, nil
		}
	}
	return nil, nil
}

func (f *fakeProvider) CreateBatch(ctx context.Context, cred llmfleet.Credential, tag string, h http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	f.mu.Lock()
	hang := f.createHang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, fmt.Errorf("%w: %w", llmfleet.ErrNotDelivered, ctx.Err())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["create"]++
	for _, it := range items {
		if !strings.HasPrefix(it.CustomID, tag+"-") {
			return nil, &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "untagged custom_id"}
		}
	}
	if err := f.createErr; err != nil {
		f.createErr = nil
		return nil, err
	}
	if f.lostCreate > 0 {
		f.lostCreate--
		return nil, &llmfleet.UncertainError{Err: errors.New("connection reset by peer")}
	}
	if d := f.landAfter; d > 0 {
		f.landAfter = 0
		go func() {
			time.Sleep(d)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.makeLocked(cred, items)
		}()
		return nil, &llmfleet.UncertainError{Err: errors.New("timeout awaiting response headers")}
	}
	b := f.makeLocked(cred, items)
	if held := f.createHeld; held != nil {
		f.mu.Unlock()
		<-held
		f.mu.Lock()
	}
	if f.answered503 {
		f.answered503 = false
		return nil, &llmfleet.UncertainError{Answered: true, Err: &llmfleet.Error{StatusCode: 503, Type: "api_error", Message: "upstream connect error"}}
	}
	if f.lostAnswer > 0 {
		f.lostAnswer--
		return nil, &llmfleet.UncertainError{Err: errors.New("timeout awaiting response headers")}
	}
	return &b, nil
}

// makeLocked makes a batch of items.
func (f *fakeProvider) makeLocked(cred llmfleet.Credential, items []llmfleet.BatchItem) llmfleet.Batch {
	id := fmt.Sprintf("msgbatch_%d", len(f.order)+1)
	now := time.Now()
	ta := 60 * time.Second
	if f.turnaround != nil {
		ta = 0
		for _, it := range items {
			ta = max(ta, f.turnaround(modelOf(it.Params)))
		}
	}
	fb := &fakeBatch{
		b:     llmfleet.Batch{ID: id, Status: llmfleet.BatchInProgress, CreatedAt: now, Counts: llmfleet.RequestCounts{Processing: len(items)}},
		cred:  cred.Fingerprint(nil),
		items: items,
		ends:  now.Add(ta),
	}
	f.batches[id] = fb
	f.order = append(f.order, id)
	return fb.b
}

func (f *fakeProvider) viewLocked(fb *fakeBatch) llmfleet.Batch {
	if !f.never && !time.Now().Before(fb.ends) && fb.b.Status != llmfleet.BatchEnded {
		fb.b.Status = llmfleet.BatchEnded
		fb.b.EndedAt = fb.ends
		fb.b.Counts = llmfleet.RequestCounts{Succeeded: len(fb.items)}
		if f.failure != nil {
			fb.b.Failure, fb.b.Counts = f.failure, llmfleet.RequestCounts{Errored: len(fb.items)}
		}
	}
	return fb.b
}

func (f *fakeProvider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["get"]++
	if f.pollErr != nil {
		return nil, f.pollErr
	}
	if f.pollErrs > 0 {
		f.pollErrs--
		return nil, &llmfleet.Error{StatusCode: 500, Type: "api_error", Message: "boom"}
	}
	fb := f.batches[id]
	if fb == nil || fb.cred != cred.Fingerprint(nil) {
		return nil, &llmfleet.Error{StatusCode: 404, Type: "not_found_error"}
	}
	b := f.viewLocked(fb)
	return &b, nil
}

func (f *fakeProvider) ListBatches(ctx context.Context, cred llmfleet.Credential, after string, limit int) (*llmfleet.BatchPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["list"]++
	if f.pollErr != nil {
		return nil, f.pollErr
	}
	if f.pollErrs > 0 {
		f.pollErrs--
		return nil, &llmfleet.Error{StatusCode: 500, Type: "api_error", Message: "boom"}
	}
	var page llmfleet.BatchPage
	started := after == ""
	for i := len(f.order) - 1; i >= 0; i-- {
		fb := f.batches[f.order[i]]
		if fb.cred != cred.Fingerprint(nil) {
			continue
		}
		if !started {
			started = fb.b.ID == after
			continue
		}
		if len(page.Batches) == limit {
			page.HasMore = true
			break
		}
		page.Batches = append(page.Batches, f.viewLocked(fb))
		page.LastID = fb.b.ID
	}
	return &page, nil
}

// resultFor decides one item's result from directives in its prompt.
func (f *fakeProvider) resultFor(it llmfleet.BatchItem) llmfleet.BatchResult {
	a := answerText(it.Params)
	switch {
	case strings.Contains(a, "[errored]"):
		return llmfleet.BatchResult{CustomID: it.CustomID, Type: llmfleet.ResultErrored,
			Error: &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "bad"}}
	case strings.Contains(a, "[canceled]"):
		return llmfleet.BatchResult{CustomID: it.CustomID, Type: llmfleet.ResultCanceled}
	case strings.Contains(a, "[expired]"):
		return llmfleet.BatchResult{CustomID: it.CustomID, Type: llmfleet.ResultExpired}
	case strings.Contains(a, "[missing]"):
		return llmfleet.BatchResult{}
	}
	return llmfleet.BatchResult{CustomID: it.CustomID, Type: llmfleet.ResultSucceeded, Message: message(it.Params),
		Model: modelOf(it.Params), Usage: f.usageOf(true)}
}

func (f *fakeProvider) Results(ctx context.Context, cred llmfleet.Credential, id string, fn func(llmfleet.BatchResult) error) error {
	f.mu.Lock()
	f.calls["results"]++
	if f.resultsErr != nil {
		f.mu.Unlock()
		return f.resultsErr
	}
	fb := f.batches[id]
	items := append([]llmfleet.BatchItem(nil), fb.items...)
	f.rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	f.mu.Unlock()
	for _, it := range items {
		r := f.resultFor(it)
		if r.CustomID == "" {
			continue
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeProvider) CancelBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	return nil, errors.New("not supported")
}

func (f *fakeProvider) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// batchSizes returns the size of each created batch, in creation order.
func (f *fakeProvider) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n []int
	for _, id := range f.order {
		n = append(n, len(f.batches[id].items))
	}
	return n
}

// usageOf returns the usage an answer reports.
func (f *fakeProvider) usageOf(batch bool) llmfleet.Usage {
	if f.usage != nil {
		return f.usage(batch)
	}
	return llmfleet.Usage{InputTokens: 10, OutputTokens: 5}
}
