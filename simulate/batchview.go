package simulate

import (
	"context"
	"time"

	"github.com/llmfleet/llmfleet"
)

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
	b.Counts = sb.counts
	if sb.canceled {
		b.Counts = llmfleet.RequestCounts{Canceled: len(sb.items)}
	}
	return b
}

func (p *Provider) get(cred llmfleet.Credential, id string) (*simBatch, error) {
	sb := p.batches[id]
	if sb == nil || sb.cred != credKey(cred) {
		return nil, apiError("not_found_error", "batch "+id+" not found")
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
			b := p.viewLocked(sb, llmfleet.Now(p.Clock))
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
	b := p.viewLocked(sb, llmfleet.Now(p.Clock))
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
	k, now := credKey(cred), llmfleet.Now(p.Clock)
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
