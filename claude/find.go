package claude

import (
	"context"
	"errors"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// Bounds of FindBatch's walk through the batch list.
const (
	findPageSize = 100
	findMaxPages = 20
)

// errFirstResult stops a results stream after its first result.
var errFirstResult = errors.New("claude: first result read")

// FindBatch looks for the batch created with q.Tag. The Message Batches
// API keeps no metadata on a batch, so the tag is read from the custom_ids
// of its results (see CreateBatch), which exist only once a batch ended.
// It lists the credential's batches newest first, back to q.Since less
// ReconcileSkew, and looks into every batch of q.Size requests that
// q.Known does not claim: an ended one by its first result, whose
// custom_id begins with the tag or not. It returns the batch that carries
// the tag; nil when none can (every candidate ended and carries another
// tag, or there is no candidate); llmfleet.ErrUndetermined while a
// candidate is still in progress, since its results, and so its tag, are
// not readable yet.
func (p *Provider) FindBatch(ctx context.Context, cred llmfleet.Credential, q llmfleet.BatchQuery) (*llmfleet.Batch, error) {
	since := q.Since.Add(-p.skew())
	undetermined := false
	after := ""
	for range findMaxPages {
		page, err := p.ListBatches(ctx, cred, after, findPageSize)
		if err != nil {
			return nil, err
		}
		older := false
		for i := range page.Batches {
			b := &page.Batches[i]
			if b.CreatedAt.Before(since) {
				older = true
				continue
			}
			if (q.Size > 0 && b.Counts.Total() != q.Size) || (q.Known != nil && q.Known(b.ID)) {
				continue
			}
			if b.Status != llmfleet.BatchEnded {
				undetermined = true
				continue
			}
			mine, err := p.carriesTag(ctx, cred, b.ID, q.Tag)
			if err != nil {
				return nil, err
			}
			if mine {
				return b, nil
			}
		}
		if older || !page.HasMore || page.LastID == "" {
			if undetermined {
				return nil, llmfleet.ErrUndetermined
			}
			return nil, nil
		}
		after = page.LastID
	}
	// The list goes on beyond what one lookup reads: it proves nothing.
	return nil, llmfleet.ErrUndetermined
}

// carriesTag reports whether the ended batch id was created with tag,
// judging by the custom_id of its first result.
func (p *Provider) carriesTag(ctx context.Context, cred llmfleet.Credential, id, tag string) (bool, error) {
	seen, mine := false, false
	err := p.Results(ctx, cred, id, func(r llmfleet.BatchResult) error {
		seen, mine = true, strings.HasPrefix(r.CustomID, tag+"-")
		return errFirstResult
	})
	if err != nil && !seen {
		return false, err
	}
	return mine, nil
}
