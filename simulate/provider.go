package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/sse"
)

// Provider is a simulated provider on a Clock: sync calls take a drawn
// latency on the clock, batches end a drawn turnaround after their
// creation (times Straggler.Factor for a Straggler.Fraction of them), and
// every answer reports the usage its Body names. It keeps its batches in
// memory. Randomness comes from Seed only: under the Clock's one task at a
// time, a run is reproducible.
type Provider struct {
	// ProviderName is what Name returns; empty means "anthropic", whose
	// prices the price table knows.
	ProviderName string
	// Clock is the clock its calls and batches take time on, usually a
	// simulation's virtual Clock; nil means the real one.
	Clock llmfleet.Clock
	// Turnaround and SyncLatency draw a batch's turnaround and a sync
	// call's latency for a model (see emulator.ParseDurations). Nil:
	// 2m-10m and 1s-3s.
	Turnaround, SyncLatency func(model string, r *rand.Rand) time.Duration
	// Straggler makes a fraction of the batches take Factor times their
	// turnaround.
	Straggler Straggler
	// FlexLatency draws a flex call's latency (a Send or Stream of a
	// Request with Flex set); nil draws from DefaultFlexLatency.
	FlexLatency func(model string, r *rand.Rand) time.Duration
	// FlexRefusal is the fraction of flex calls refused at once with the
	// unbilled 429 of a flex tier out of capacity.
	FlexRefusal float64
	// FlexTimeout is the upstream timeout it states for its flex tier
	// (llmfleet.TierTimeouts; Gemini's: gemini.FlexUpstreamTimeout); 0:
	// none of its own.
	FlexTimeout time.Duration
	// Seed seeds the draws.
	Seed uint64
	// Cache, if not nil, is the behaviour of the provider's prompt cache,
	// which computes the input usage of the bodies with a prompt
	// structure (Body.Prompt); nil means cachesim.Default().
	Cache *cachesim.Config

	once    sync.Once
	mu      sync.Mutex
	rng     *rand.Rand
	batches map[string]*simBatch
	byCred  map[string][]*simBatch // by credential, oldest first
	n       int                    // batches made
	// Calls counts the calls made to it, by method.
	calls map[string]int
	// The prompt cache, and the batch requests waiting to use it, by time.
	cache  *cachesim.Cache
	runs   []*itemRun
	runSeq int
}

// Straggler describes the batches that take much longer than their
// model's turnaround.
type Straggler struct {
	Fraction float64
	Factor   float64
}

type simBatch struct {
	b     llmfleet.Batch
	cred  string
	pos   int // in its credential's list
	tag   string
	items []llmfleet.BatchItem
	// canceled is set by CancelBatch before the batch ended.
	canceled bool
	// counts are its results' once ended (unless canceled).
	counts llmfleet.RequestCounts
	// usage holds, for its requests with a prompt structure, their usage
	// once they ran.
	usage []*llmfleet.Usage
}

func (p *Provider) init() {
	p.once.Do(func() {
		p.rng = rand.New(rand.NewPCG(p.Seed, 0x5eed))
		p.batches = map[string]*simBatch{}
		p.byCred = map[string][]*simBatch{}
		p.calls = map[string]int{}
		p.cache = cachesim.New(p.cacheConfig())
	})
}

// Calls returns how many calls each method got.
func (p *Provider) Calls() map[string]int {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.calls))
	for k, v := range p.calls {
		out[k] = v
	}
	return out
}

// Name returns ProviderName, or "anthropic".
func (p *Provider) Name() string {
	if p.ProviderName == "" {
		return "anthropic"
	}
	return p.ProviderName
}

// Limits returns Anthropic's batch limits.
func (p *Provider) Limits() llmfleet.BatchLimits {
	return llmfleet.BatchLimits{MaxRequests: 100_000, MaxBytes: 256 << 20}
}

// apiError is an error answer of the API.
func apiError(typ, msg string) *llmfleet.Error {
	return &llmfleet.Error{StatusCode: claudewire.StatusForType(typ), Type: typ, Message: msg,
		RequestID: "req_sim", Body: claudewire.Envelope(typ, msg, "req_sim")}
}

func (p *Provider) count(method string) {
	p.mu.Lock()
	p.calls[method]++
	p.mu.Unlock()
}

func (p *Provider) draw(f func(string, *rand.Rand) time.Duration, def [2]time.Duration, model string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f != nil {
		return f(model, p.rng)
	}
	return def[0] + time.Duration(p.rng.Int64N(int64(def[1]-def[0])+1))
}

// Send takes the model's drawn sync latency on the clock and answers.
func (p *Provider) Send(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	p.init()
	p.count("send")
	b, err := parseBody(req.Body)
	if err != nil {
		return nil, err
	}
	lat, tier := p.draw(p.SyncLatency, [2]time.Duration{time.Second, 3 * time.Second}, b.Model), llmfleet.TierStandard
	if req.Flex {
		p.mu.Lock()
		refused := p.FlexRefusal > 0 && p.rng.Float64() < p.FlexRefusal
		p.mu.Unlock()
		if refused {
			p.count("flex_refused")
			return nil, &llmfleet.Error{StatusCode: http.StatusTooManyRequests, Type: "resource_unavailable",
				Message: "Resource unavailable (simulated flex refusal).", Reason: llmfleet.ErrFlexUnavailable}
		}
		lat, tier = p.draw(p.FlexLatency, DefaultFlexLatency, b.Model), llmfleet.TierFlex
	}
	if err := llmfleet.Sleep(ctx, p.Clock, lat); err != nil {
		return nil, err
	}
	u := p.syncUsage(req.Credential, b)
	m := messageOf(b, u)
	return &llmfleet.Response{Route: llmfleet.RouteSync, StatusCode: 200, Header: http.Header{}, Body: m, Usage: u, Model: b.Model, Tier: tier}, nil
}

// DefaultFlexLatency is the range a flex call's latency is drawn from
// when Provider.FlexLatency is nil: flex is slower than the standard
// tier, by how much is not published.
var DefaultFlexLatency = [2]time.Duration{3 * time.Second, 30 * time.Second}

// Stream answers like Send, as a Messages event stream.
func (p *Provider) Stream(ctx context.Context, req *llmfleet.Request) (io.ReadCloser, error) {
	resp, err := p.Send(ctx, req)
	if err != nil {
		return nil, err
	}
	var msg struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(resp.Body, &msg)
	text := ""
	if len(msg.Content) > 0 {
		text = msg.Content[0].Text
	}
	var start map[string]any
	_ = json.Unmarshal(resp.Body, &start)
	start["content"] = []any{}
	var stream []byte
	event := func(name string, data map[string]any) {
		data["type"] = name
		j, _ := json.Marshal(data)
		stream = sse.AppendEvent(stream, name, j)
	}
	event("message_start", map[string]any{"message": start})
	event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": resp.Usage.OutputTokens}})
	event("message_stop", map[string]any{})
	return io.NopCloser(bytes.NewReader(stream)), nil
}

// messagesShape reads Messages API bodies: their model, their pool key
// (the anthropic-* headers) and their batch params (without "stream"),
// exactly as the Anthropic provider does.
var messagesShape = &claude.Provider{}

// Inspect reads the model; the pool key is that of the Anthropic
// provider (the anthropic-* headers).
func (p *Provider) Inspect(req *llmfleet.Request) (llmfleet.RequestInfo, error) {
	if b, ok := parseOwn(req.Body); ok && len(req.Header) == 0 {
		return llmfleet.RequestInfo{Model: b.Model}, nil
	}
	if b, err := parseBody(req.Body); err == nil && len(req.Header) == 0 && b.text == "ok" {
		info := llmfleet.RequestInfo{Model: b.Model}
		if b.Prompt != nil {
			info.Prompt = b.Prompt.Prompt(b.Model, b.InputTokens)
		}
		return info, nil
	}
	return messagesShape.Inspect(req)
}

// BatchParams returns the body without "stream".
func (p *Provider) BatchParams(req *llmfleet.Request) (json.RawMessage, error) {
	if _, ok := parseOwn(req.Body); ok {
		return req.Body, nil
	}
	if b, err := parseBody(req.Body); err == nil && b.text == "ok" {
		return req.Body, nil
	}
	return messagesShape.BatchParams(req)
}

// CreateBatch makes a batch that ends the longest drawn turnaround of its
// models from now, times the straggler factor if it draws one.
func (p *Provider) CreateBatch(ctx context.Context, cred llmfleet.Credential, tag string, header http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	p.init()
	p.count("create")
	if len(items) == 0 {
		return nil, apiError("invalid_request_error", "requests: empty")
	}
	var turnaround time.Duration
	seen := map[string]bool{}
	ids := make(map[string]bool, len(items))
	for _, it := range items {
		if !validCustomID(it.CustomID) {
			return nil, apiError("invalid_request_error", "requests: custom_id "+strconv.Quote(it.CustomID)+" must be 1 to 64 characters of [a-zA-Z0-9_-]")
		}
		if ids[it.CustomID] {
			return nil, apiError("invalid_request_error", "requests: custom_id "+strconv.Quote(it.CustomID)+" is not unique")
		}
		ids[it.CustomID] = true
		b, _ := parseBody(it.Params) // an invalid one errors in the results
		if !seen[b.Model] {
			seen[b.Model] = true
			turnaround = max(turnaround, p.draw(p.Turnaround, [2]time.Duration{2 * time.Minute, 10 * time.Minute}, b.Model))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Straggler.Fraction > 0 && p.rng.Float64() < p.Straggler.Fraction {
		turnaround = time.Duration(float64(turnaround) * p.Straggler.Factor)
	}
	now := llmfleet.Now(p.Clock)
	p.n++
	id := fmt.Sprintf("msgbatch_sim%08d", p.n)
	k := credKey(cred)
	sb := &simBatch{cred: k, pos: len(p.byCred[k]), tag: tag, items: slices.Clone(items),
		b: llmfleet.Batch{ID: id, Status: llmfleet.BatchInProgress, Counts: llmfleet.RequestCounts{Processing: len(items)},
			CreatedAt: now, EndedAt: now.Add(turnaround), ExpiresAt: now.Add(24 * time.Hour), ResultsURL: "sim://" + id + "/results"}}
	for _, it := range items {
		if _, err := parseBody(it.Params); err != nil {
			sb.counts.Errored++
		} else {
			sb.counts.Succeeded++
		}
	}
	p.batches[id] = sb
	p.byCred[k] = append(p.byCred[k], sb)
	p.scheduleLocked(sb)
	b := p.viewLocked(sb, now)
	return &b, nil
}

// Results streams an ended batch's results.
func (p *Provider) Results(ctx context.Context, cred llmfleet.Credential, id string, fn func(llmfleet.BatchResult) error) error {
	p.init()
	p.count("results")
	p.mu.Lock()
	sb, err := p.get(cred, id)
	if err == nil && llmfleet.Now(p.Clock).Before(sb.b.EndedAt) {
		err = apiError("invalid_request_error", "batch "+id+" has not ended")
	}
	p.runDueLocked(llmfleet.Now(p.Clock))
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for i, it := range sb.items {
		r := llmfleet.BatchResult{CustomID: it.CustomID, Type: llmfleet.ResultSucceeded}
		if sb.canceled {
			r.Type = llmfleet.ResultCanceled
		} else {
			b, err := parseBody(it.Params)
			if err != nil {
				r.Type, r.Error = llmfleet.ResultErrored, err.(*llmfleet.Error)
			} else {
				p.mu.Lock()
				r.Usage = sb.batchUsage(i, b)
				p.mu.Unlock()
				r.Message, r.Model = messageOf(b, r.Usage), b.Model
			}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// CancelBatch cancels a batch that has not ended: it ends now, its
// requests canceled.
func (p *Provider) CancelBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	p.init()
	p.count("cancel")
	p.mu.Lock()
	defer p.mu.Unlock()
	sb, err := p.get(cred, id)
	if err != nil {
		return nil, err
	}
	now := llmfleet.Now(p.Clock)
	if now.Before(sb.b.EndedAt) {
		sb.canceled = true
		sb.b.EndedAt = now
	}
	b := p.viewLocked(sb, now)
	return &b, nil
}

func validCustomID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// credKey tells the credentials apart (the simulator's keys are no
// secrets).
func credKey(c llmfleet.Credential) string { return c.APIKey + "\x00" + c.AuthToken }

var _ llmfleet.Provider = (*Provider)(nil)
