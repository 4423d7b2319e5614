package providertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// item is a batch item and the outcome the suite expects for it.
type item struct {
	llmfleet.BatchItem
	want      llmfleet.ResultType
	errorType string
}

// items returns n items whose custom_ids carry tag, as CreateBatch needs.
func (s *suite) items(tag string, n int) []item {
	out := make([]item, n)
	for i := range out {
		out[i] = item{
			BatchItem: llmfleet.BatchItem{
				CustomID: fmt.Sprintf("%s-%d", tag, i),
				Params:   s.body(fmt.Sprintf("%s question number %d", tag, i)),
			},
			want: llmfleet.ResultSucceeded,
		}
	}
	return out
}

// create creates a batch of its tagged tag.
func create(t *testing.T, e Env, tag string, its []item) (*llmfleet.Batch, error) {
	return e.Provider.CreateBatch(ctx(t), e.Credential, tag, nil, batchItems(its))
}

func batchItems(its []item) []llmfleet.BatchItem {
	out := make([]llmfleet.BatchItem, len(its))
	for i, it := range its {
		out[i] = it.BatchItem
	}
	return out
}

// waitEnded advances the upstream's clock, by doubling steps, until the batch
// has ended; at most 30 hours, beyond the 24 hours after which a batch
// expires.
func waitEnded(t *testing.T, e Env, id string) *llmfleet.Batch {
	t.Helper()
	total := time.Duration(0)
	for step := time.Second; total <= 30*time.Hour; step *= 2 {
		e.Advance(step)
		total += step
		b, err := e.Provider.GetBatch(ctx(t), e.Credential, id)
		if err != nil {
			t.Fatalf("GetBatch: %v", err)
		}
		if b.ID != id {
			t.Fatalf("GetBatch(%s) returned %s", id, b.ID)
		}
		if b.Status == llmfleet.BatchEnded {
			if b.PollAfter != 0 {
				t.Errorf("ended batch: PollAfter %s, want none", b.PollAfter)
			}
			return b
		}
		if b.Status != llmfleet.BatchInProgress && b.Status != llmfleet.BatchCanceling {
			t.Fatalf("batch status %q", b.Status)
		}
		if b.PollAfter != e.PollAfter {
			t.Errorf("batch %s: PollAfter %s, want the upstream's Retry-After, %s", b.Status, b.PollAfter, e.PollAfter)
		}
	}
	t.Fatalf("batch %s did not end within 30h", id)
	return nil
}

// results collects a batch's results by custom_id, failing on duplicates.
func results(t *testing.T, e Env, id string) (map[string]llmfleet.BatchResult, []string) {
	t.Helper()
	got := map[string]llmfleet.BatchResult{}
	var order []string
	err := e.Provider.Results(ctx(t), e.Credential, id, func(r llmfleet.BatchResult) error {
		if _, dup := got[r.CustomID]; dup {
			t.Errorf("result for %s delivered twice", r.CustomID)
		}
		got[r.CustomID] = r
		order = append(order, r.CustomID)
		return nil
	})
	if err != nil {
		t.Fatalf("Results: %v", err)
	}
	return got, order
}

// countResults tallies results by type.
func countResults(rs map[string]llmfleet.BatchResult) llmfleet.RequestCounts {
	var c llmfleet.RequestCounts
	for _, r := range rs {
		switch r.Type {
		case llmfleet.ResultSucceeded:
			c.Succeeded++
		case llmfleet.ResultErrored:
			c.Errored++
		case llmfleet.ResultCanceled:
			c.Canceled++
		case llmfleet.ResultExpired:
			c.Expired++
		}
	}
	return c
}

func (s *suite) needAdvance(t *testing.T, e Env) {
	if e.Advance == nil {
		t.Skip("Env.Advance is nil: batches cannot be made to end")
	}
}

func (s *suite) batchResultsEarly(t *testing.T) {
	e := s.env(t)
	b, err := create(t, e, "early", s.items("early", 2))
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	called := false
	err = e.Provider.Results(ctx(t), e.Credential, b.ID, func(llmfleet.BatchResult) error {
		called = true
		return nil
	})
	if err == nil || called {
		t.Errorf("Results of a running batch: err %v, fn called %v", err, called)
	}
}

func (s *suite) batchList(t *testing.T) {
	e := s.env(t)
	var ids []string
	for i := range 3 {
		tag := fmt.Sprintf("list%d", i)
		b, err := create(t, e, tag, s.items(tag, i+1))
		if err != nil {
			t.Fatalf("CreateBatch: %v", err)
		}
		ids = append(ids, b.ID)
	}
	page, err := e.Provider.ListBatches(ctx(t), e.Credential, "", 2)
	if err != nil {
		t.Fatalf("ListBatches: %v", err)
	}
	if len(page.Batches) != 2 || page.Batches[0].ID != ids[2] || page.Batches[1].ID != ids[1] || !page.HasMore || page.LastID != ids[1] {
		t.Errorf("first page %+v, want %v newest first", page, ids)
	}
	if len(page.Batches) == 2 && page.Batches[0].Counts.Total() != 3 {
		t.Errorf("listed counts %+v", page.Batches[0].Counts)
	}
	page, err = e.Provider.ListBatches(ctx(t), e.Credential, page.LastID, 2)
	if err != nil {
		t.Fatalf("ListBatches: %v", err)
	}
	if len(page.Batches) != 1 || page.Batches[0].ID != ids[0] || page.HasMore {
		t.Errorf("second page %+v", page)
	}
	page, err = e.Provider.ListBatches(ctx(t), e.Credential, "", 0)
	if err != nil {
		t.Fatalf("ListBatches: %v", err)
	}
	if len(page.Batches) != 3 || page.HasMore {
		t.Errorf("default page %+v", page)
	}
}

func (s *suite) batchCancel(t *testing.T) {
	e := s.env(t)
	s.needAdvance(t, e)
	since := e.now()
	its := s.items("cancel", 5)
	b, err := create(t, e, "cancel", its)
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	c, err := e.Provider.CancelBatch(ctx(t), e.Credential, b.ID)
	if err != nil {
		t.Fatalf("CancelBatch: %v", err)
	}
	if c.ID != b.ID || (c.Status != llmfleet.BatchCanceling && c.Status != llmfleet.BatchEnded) {
		t.Errorf("canceled batch %+v", c)
	}
	ended := waitEnded(t, e, b.ID)
	if ended.Counts.Canceled+ended.Counts.Succeeded != len(its) {
		t.Errorf("canceled batch counts %+v", ended.Counts)
	}
	rs, _ := results(t, e, b.ID)
	if len(rs) != len(its) {
		t.Fatalf("%d results for %d requests", len(rs), len(its))
	}
	for _, it := range its {
		r := rs[it.CustomID]
		switch r.Type {
		case llmfleet.ResultSucceeded:
			s.checkMessage(t, it.Params, r.Message)
		case llmfleet.ResultCanceled:
		default:
			t.Errorf("%s: result %q in a canceled batch", it.CustomID, r.Type)
		}
	}
	if c := countResults(rs); c != ended.Counts {
		t.Errorf("results count %+v, batch says %+v", c, ended.Counts)
	}
	s.find(t, e, query("cancel", len(its), since), b, false)
}

func (s *suite) batchNotFound(t *testing.T) {
	e := s.env(t)
	const id = "msgbatch_01NoSuchBatchAnywhere"
	_, err := e.Provider.GetBatch(ctx(t), e.Credential, id)
	nf := s.wire().NotFound()
	wantError(t, "GetBatch", err, 404, nf)
	_, err = e.Provider.CancelBatch(ctx(t), e.Credential, id)
	wantError(t, "CancelBatch", err, 404, nf)
	err = e.Provider.Results(ctx(t), e.Credential, id, func(llmfleet.BatchResult) error { return nil })
	wantError(t, "Results", err, 404, nf)
}

func (s *suite) batchCreateRejected(t *testing.T) {
	e := s.env(t)
	its := s.items("dup", 2)
	its[1].CustomID = its[0].CustomID
	_, err := create(t, e, "dup", its)
	wantError(t, "duplicate custom_id", err, 400, s.invalidType())
	its = s.items("bad", 1)
	its[0].CustomID = "bad-not a valid id!"
	_, err = create(t, e, "bad", its)
	wantError(t, "bad custom_id", err, 400, s.invalidType())
	s.wantBatches(t, e, 0)
}

// wantBatches checks that the upstream lists n batches, and returns them.
func (s *suite) wantBatches(t *testing.T, e Env, n int) []llmfleet.Batch {
	t.Helper()
	page, err := e.Provider.ListBatches(ctx(t), e.Credential, "", 100)
	if err != nil {
		t.Fatalf("ListBatches: %v", err)
	}
	if len(page.Batches) != n {
		t.Errorf("upstream lists %d batches, want %d", len(page.Batches), n)
	}
	return page.Batches
}
