package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Body is the synthetic request body the simulated provider reads: the
// model, and the usage its answer reports.
type Body struct {
	Model        string `json:"model"`
	ID           string `json:"id,omitempty"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

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
	// Clock is the virtual clock. Required.
	Clock *Clock
	// Turnaround and SyncLatency draw a batch's turnaround and a sync
	// call's latency for a model (see emulator.ParseDurations). Nil:
	// 2m-10m and 1s-3s.
	Turnaround, SyncLatency func(model string, r *rand.Rand) time.Duration
	// Straggler makes a fraction of the batches take Factor times their
	// turnaround.
	Straggler Straggler
	// Seed seeds the draws.
	Seed uint64

	once    sync.Once
	mu      sync.Mutex
	rng     *rand.Rand
	batches map[string]*simBatch
	byCred  map[string][]*simBatch // by credential, oldest first
	n       int                    // batches made
	// Calls counts the calls made to it, by method.
	calls map[string]int
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
}

func (p *Provider) init() {
	p.once.Do(func() {
		p.rng = rand.New(rand.NewPCG(p.Seed, 0x5eed))
		p.batches = map[string]*simBatch{}
		p.byCred = map[string][]*simBatch{}
		p.calls = map[string]int{}
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

func parseBody(raw []byte) (Body, error) {
	if b, ok := parseOwn(raw); ok {
		return b, nil
	}
	var b Body
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "body: " + err.Error()}
	}
	if b.Model == "" {
		return b, &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "model: field required"}
	}
	return b, nil
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

// parseOwn reads a body exactly as bodyOf writes it, without the cost of
// encoding/json (the simulator reads each body several times); false for
// any other.
func parseOwn(raw []byte) (Body, bool) {
	var b Body
	s := string(raw)
	field := func(name string, quoted bool) (string, bool) {
		pre := `"` + name + `":`
		if !strings.HasPrefix(s, pre) {
			return "", false
		}
		s = s[len(pre):]
		end := strings.IndexAny(s, ",}")
		if end < 0 {
			return "", false
		}
		v := s[:end]
		s = s[end+1:]
		if quoted {
			u, err := strconv.Unquote(v)
			return u, err == nil && !strings.ContainsAny(u, `",}\`)
		}
		return v, true
	}
	if !strings.HasPrefix(s, "{") {
		return b, false
	}
	s = s[1:]
	var ok bool
	var in, out string
	if b.Model, ok = field("model", true); !ok || b.Model == "" {
		return b, false
	}
	if b.ID, ok = field("id", true); !ok {
		return b, false
	}
	if in, ok = field("input_tokens", false); !ok {
		return b, false
	}
	if out, ok = field("output_tokens", false); !ok || s != "" {
		return b, false
	}
	var err1, err2 error
	b.InputTokens, err1 = strconv.ParseInt(in, 10, 64)
	b.OutputTokens, err2 = strconv.ParseInt(out, 10, 64)
	return b, err1 == nil && err2 == nil
}

// message is the answer to a body: a Messages API message.
func message(b Body) (json.RawMessage, llmfleet.Usage) {
	u := llmfleet.Usage{InputTokens: b.InputTokens, OutputTokens: b.OutputTokens}
	m := make([]byte, 0, 256)
	m = append(m, `{"id":`...)
	m = strconv.AppendQuote(m, "msg_sim_"+b.ID)
	m = append(m, `,"type":"message","role":"assistant","model":`...)
	m = strconv.AppendQuote(m, b.Model)
	m = append(m, `,"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":`...)
	m = strconv.AppendInt(m, u.InputTokens, 10)
	m = append(m, `,"output_tokens":`...)
	m = strconv.AppendInt(m, u.OutputTokens, 10)
	m = append(m, `}}`...)
	return m, u
}

// Send takes the model's drawn sync latency on the clock and answers.
func (p *Provider) Send(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	p.init()
	p.count("send")
	b, err := parseBody(req.Body)
	if err != nil {
		return nil, err
	}
	if err := p.Clock.Sleep(ctx, p.draw(p.SyncLatency, [2]time.Duration{time.Second, 3 * time.Second}, b.Model)); err != nil {
		return nil, err
	}
	m, u := message(b)
	return &llmfleet.Response{StatusCode: 200, Body: m, Usage: u, Model: b.Model}, nil
}

// Stream answers like Send, as a server-sent-event stream.
func (p *Provider) Stream(ctx context.Context, req *llmfleet.Request) (io.ReadCloser, error) {
	resp, err := p.Send(ctx, req)
	if err != nil {
		return nil, err
	}
	s := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":" + string(resp.Body) + "}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	return io.NopCloser(strings.NewReader(s)), nil
}

// Inspect reads the model; requests of one credential all share pools.
func (p *Provider) Inspect(req *llmfleet.Request) (llmfleet.RequestInfo, error) {
	b, err := parseBody(req.Body)
	if err != nil {
		return llmfleet.RequestInfo{}, err
	}
	return llmfleet.RequestInfo{Model: b.Model}, nil
}

// BatchParams returns the body as it is.
func (p *Provider) BatchParams(req *llmfleet.Request) (json.RawMessage, error) {
	if _, err := parseBody(req.Body); err != nil {
		return nil, err
	}
	return req.Body, nil
}

// CreateBatch makes a batch that ends the longest drawn turnaround of its
// models from now, times the straggler factor if it draws one.
func (p *Provider) CreateBatch(ctx context.Context, cred llmfleet.Credential, tag string, header http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	p.init()
	p.count("create")
	if len(items) == 0 {
		return nil, &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "requests: empty"}
	}
	var turnaround time.Duration
	seen := map[string]bool{}
	for _, it := range items {
		b, err := parseBody(it.Params)
		if err != nil {
			return nil, err
		}
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
	now := p.Clock.Now()
	p.n++
	id := fmt.Sprintf("msgbatch_sim%08d", p.n)
	k := credKey(cred)
	sb := &simBatch{cred: k, pos: len(p.byCred[k]), tag: tag, items: slices.Clone(items),
		b: llmfleet.Batch{ID: id, Status: llmfleet.BatchInProgress, Counts: llmfleet.RequestCounts{Processing: len(items)},
			CreatedAt: now, EndedAt: now.Add(turnaround), ExpiresAt: now.Add(24 * time.Hour), ResultsURL: "sim://" + id + "/results"}}
	p.batches[id] = sb
	p.byCred[k] = append(p.byCred[k], sb)
	b := p.viewLocked(sb, now)
	return &b, nil
}

// viewLocked is the batch as the provider shows it at now.
func (p *Provider) viewLocked(sb *simBatch, now time.Time) llmfleet.Batch {
	b := sb.b
	if now.Before(b.EndedAt) {
		b.EndedAt, b.ResultsURL = time.Time{}, ""
		if sb.canceled {
			b.Status = llmfleet.BatchCanceling
		}
		return b
	}
	b.Status = llmfleet.BatchEnded
	b.Counts = llmfleet.RequestCounts{Succeeded: len(sb.items)}
	if sb.canceled {
		b.Counts = llmfleet.RequestCounts{Canceled: len(sb.items)}
	}
	return b
}

func (p *Provider) get(cred llmfleet.Credential, id string) (*simBatch, error) {
	sb := p.batches[id]
	if sb == nil || sb.cred != credKey(cred) {
		return nil, &llmfleet.Error{StatusCode: 404, Type: "not_found_error", Message: "batch " + id + " not found"}
	}
	return sb, nil
}

// FindBatch looks for the credential's batch created with q.Tag.
func (p *Provider) FindBatch(ctx context.Context, cred llmfleet.Credential, q llmfleet.BatchQuery) (*llmfleet.Batch, error) {
	p.init()
	p.count("find")
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.byCred[credKey(cred)]
	for i := len(list) - 1; i >= 0; i-- {
		sb := list[i]
		if sb.b.CreatedAt.Before(q.Since) {
			break
		}
		if sb.tag == q.Tag {
			b := p.viewLocked(sb, p.Clock.Now())
			return &b, nil
		}
	}
	return nil, nil
}

// GetBatch retrieves one batch.
func (p *Provider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	p.init()
	p.count("get")
	p.mu.Lock()
	defer p.mu.Unlock()
	sb, err := p.get(cred, id)
	if err != nil {
		return nil, err
	}
	b := p.viewLocked(sb, p.Clock.Now())
	return &b, nil
}

// ListBatches lists the credential's batches, newest first.
func (p *Provider) ListBatches(ctx context.Context, cred llmfleet.Credential, afterID string, limit int) (*llmfleet.BatchPage, error) {
	p.init()
	p.count("list")
	if limit <= 0 {
		limit = 20
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k, now := credKey(cred), p.Clock.Now()
	list := p.byCred[k]
	from := len(list) - 1
	if afterID != "" {
		after, err := p.get(cred, afterID)
		if err != nil {
			return nil, err
		}
		from = after.pos - 1
	}
	page := &llmfleet.BatchPage{Batches: make([]llmfleet.Batch, 0, min(limit, max(from+1, 0)))}
	for i := from; i >= 0; i-- {
		sb := list[i]
		if len(page.Batches) == limit {
			page.HasMore = true
			break
		}
		page.Batches = append(page.Batches, p.viewLocked(sb, now))
		page.LastID = sb.b.ID
	}
	return page, nil
}

// Results streams an ended batch's results.
func (p *Provider) Results(ctx context.Context, cred llmfleet.Credential, id string, fn func(llmfleet.BatchResult) error) error {
	p.init()
	p.count("results")
	p.mu.Lock()
	sb, err := p.get(cred, id)
	if err == nil && p.Clock.Now().Before(sb.b.EndedAt) {
		err = &llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "batch " + id + " has not ended"}
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for _, it := range sb.items {
		r := llmfleet.BatchResult{CustomID: it.CustomID, Type: llmfleet.ResultSucceeded}
		if sb.canceled {
			r.Type = llmfleet.ResultCanceled
		} else {
			b, err := parseBody(it.Params)
			if err != nil {
				r.Type, r.Error = llmfleet.ResultErrored, err.(*llmfleet.Error)
			} else {
				r.Message, r.Usage = message(b)
				r.Model = b.Model
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
	now := p.Clock.Now()
	if now.Before(sb.b.EndedAt) {
		sb.canceled = true
		sb.b.EndedAt = now
	}
	b := p.viewLocked(sb, now)
	return &b, nil
}

// credKey tells the credentials apart (the simulator's keys are no
// secrets).
func credKey(c llmfleet.Credential) string { return c.APIKey + "\x00" + c.AuthToken }

// bodyOf is the synthetic body of one turn.
func bodyOf(model, id string, in, out int64) json.RawMessage {
	return json.RawMessage(`{"model":` + strconv.Quote(model) + `,"id":` + strconv.Quote(id) +
		`,"input_tokens":` + strconv.FormatInt(in, 10) + `,"output_tokens":` + strconv.FormatInt(out, 10) + `}`)
}

var _ llmfleet.Provider = (*Provider)(nil)
