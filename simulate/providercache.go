package simulate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
)

// The simulated provider's prompt cache: a body with a prompt structure
// (Body.Prompt) gets the input side of its usage from a cachesim.Cache,
// as the emulator's requests do. A sync or flex call looks the sync
// cache up when it is answered; a batch request looks the batch cache up
// when it runs, at a time drawn uniformly within its batch's turnaround.
// Batch requests run lazily, in time order, before any later lookup
// (runDueLocked), so that the cache sees every request in the order the
// provider would have.

// itemRun is a batch request with a prompt structure, waiting to run.
type itemRun struct {
	sb  *simBatch
	i   int // its index in sb.items
	at  time.Time
	seq int // order of scheduling, for ties
}

// cacheRand returns a source seeded by the provider's Seed and labels,
// apart from the provider's own draws (which it leaves as they were).
func (p *Provider) cacheRand(labels ...any) *rand.Rand {
	h := sha256.New()
	fmt.Fprintf(h, "cache|%d", p.Seed)
	for _, l := range labels {
		fmt.Fprintf(h, "|%v", l)
	}
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// cacheConfig is Cache, or cachesim.Default().
func (p *Provider) cacheConfig() cachesim.Config {
	if p.Cache != nil {
		return *p.Cache
	}
	return cachesim.Default()
}

// syncUsage is the usage of a sync (or flex) call of body b with
// credential cred answered now: from the sync cache when b has a prompt
// structure, from b otherwise.
func (p *Provider) syncUsage(cred llmfleet.Credential, b Body) llmfleet.Usage {
	if b.Prompt == nil {
		return usageOf(b)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := llmfleet.Now(p.Clock)
	p.runDueLocked(now)
	in := p.cache.Use(cachesim.Lookup{Key: credKey(cred), Route: cachesim.Sync, Now: now,
		Prompt: b.Prompt.Prompt(b.Model, b.InputTokens)}, p.cacheRand("sync", b.ID, now.UnixNano()))
	return in.With(b.OutputTokens)
}

// scheduleLocked schedules the requests of sb that have a prompt
// structure to run within its turnaround. The caller holds mu.
func (p *Provider) scheduleLocked(sb *simBatch) {
	sb.usage = make([]*llmfleet.Usage, len(sb.items))
	span := sb.b.EndedAt.Sub(sb.b.CreatedAt)
	for i, it := range sb.items {
		b, err := parseBody(it.Params)
		if err != nil || b.Prompt == nil {
			continue
		}
		f := p.cacheRand("run", sb.b.ID, b.ID).Float64() // custom_ids are random
		p.runSeq++
		r := &itemRun{sb: sb, i: i, at: sb.b.CreatedAt.Add(time.Duration(f * float64(span))), seq: p.runSeq}
		k := sort.Search(len(p.runs), func(k int) bool { return p.runs[k].at.After(r.at) })
		p.runs = append(p.runs, nil)
		copy(p.runs[k+1:], p.runs[k:])
		p.runs[k] = r
	}
}

// runDueLocked runs the scheduled batch requests due by now, in time
// order, through the batch cache; a canceled batch's requests due after
// its cancel do not run. The caller holds mu.
func (p *Provider) runDueLocked(now time.Time) {
	n := 0
	for n < len(p.runs) && !p.runs[n].at.After(now) {
		r := p.runs[n]
		n++
		if r.sb.canceled && r.at.After(r.sb.b.EndedAt) {
			continue
		}
		it := r.sb.items[r.i]
		b, _ := parseBody(it.Params)
		in := p.cache.Use(cachesim.Lookup{Key: r.sb.cred, Route: cachesim.Batch, Now: r.at,
			Prompt: b.Prompt.Prompt(b.Model, b.InputTokens)}, p.cacheRand("batch", r.sb.b.ID, b.ID))
		u := in.With(b.OutputTokens)
		r.sb.usage[r.i] = &u
	}
	clear(p.runs[:n])
	p.runs = p.runs[n:]
}

// batchUsage is the usage of request i of an ended batch sb, body b. The
// caller holds mu and has run the requests due.
func (sb *simBatch) batchUsage(i int, b Body) llmfleet.Usage {
	if b.Prompt == nil || sb.usage[i] == nil {
		return usageOf(b)
	}
	return *sb.usage[i]
}

// UpgradeTTL returns the params of a batch request with every 5-minute
// cache breakpoint of its prompt structure raised to an hour, and how
// many it raised: what the engine may do to a batched request whose wait
// outlasts five minutes (the shape of llmfleet.TTLUpgrader). Params
// without a prompt structure (Messages API bodies included) come back as
// they were.
func (p *Provider) UpgradeTTL(params json.RawMessage) (json.RawMessage, int, error) {
	b, err := parseBody(params)
	if err != nil || b.Prompt == nil {
		return params, 0, nil
	}
	up := *b.Prompt
	up.Breakpoints = slices.Clone(up.Breakpoints)
	n := 0
	for i := range up.Breakpoints {
		if up.Breakpoints[i].TTL != "1h" {
			up.Breakpoints[i].TTL = "1h"
			n++
		}
	}
	if n == 0 {
		return params, 0, nil
	}
	return promptBody(b.Model, b.ID, b.InputTokens, b.OutputTokens, &up), n, nil
}
