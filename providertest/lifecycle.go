package providertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// lifecycleTag is a tag of the greatest length, 40 characters.
const lifecycleTag = "lifecycle_0123456789_0123456789_01234567"

// batchLifecycle creates a batch of items of every outcome, follows it
// until it ends, finds it by its tag and checks its results.
func (s *suite) batchLifecycle(t *testing.T) {
	e := s.env(t)
	s.needAdvance(t, e)
	since := e.now()
	its := s.lifecycleItems(t, e)
	n := len(its)
	created, err := create(t, e, lifecycleTag, its)
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	s.checkCreated(t, e, created, n)

	ended := waitEnded(t, e, created.ID)
	if ended.EndedAt.IsZero() || ended.EndedAt.Before(ended.CreatedAt) || ended.Counts.Processing != 0 || ended.Counts.Total() != n {
		t.Errorf("ended batch %+v", ended)
	}
	s.find(t, e, query(lifecycleTag, n, since), created, false)
	rs, order := results(t, e, created.ID)
	if len(rs) != n {
		t.Fatalf("%d results for %d requests", len(rs), n)
	}
	if c := countResults(rs); c != ended.Counts {
		t.Errorf("results count %+v, batch says %+v", c, ended.Counts)
	}
	s.checkResults(t, its, rs)
	inOrder := slices.EqualFunc(order, its, func(id string, it item) bool { return id == it.CustomID })
	t.Logf("results came in submission order: %v", inOrder)

	stop := errors.New("stop here")
	calls := 0
	err = e.Provider.Results(ctx(t), e.Credential, created.ID, func(llmfleet.BatchResult) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("an error from fn: Results returned %v after %d calls", err, calls)
	}
}

// lifecycleItems are the lifecycle batch's items: plain questions, a
// streaming request as BatchParams gives it, invalid params, and, when
// the harness can ask for them, an upstream error and an item left to
// expire.
func (s *suite) lifecycleItems(t *testing.T, e Env) []item {
	its := s.items(lifecycleTag, 6)
	// A streaming request goes into a batch as BatchParams gives it.
	params, err := e.Provider.BatchParams(s.request(e, s.body("a streamed question", `"stream":true`)))
	if err != nil {
		t.Fatalf("BatchParams: %v", err)
	}
	its = append(its, item{
		BatchItem: llmfleet.BatchItem{CustomID: lifecycleTag + "-streamed", Params: params},
		want:      llmfleet.ResultSucceeded,
	})
	its = append(its, item{
		BatchItem: llmfleet.BatchItem{CustomID: lifecycleTag + "-bad_params",
			Params: s.wire().Invalid(s.model(), false)},
		want: llmfleet.ResultErrored, errorType: s.invalidType(),
	})
	if s.h.ErrorPrompt != nil {
		its = append(its, item{
			BatchItem: llmfleet.BatchItem{CustomID: lifecycleTag + "-overloaded", Params: s.body(s.h.ErrorPrompt(s.wire().ErrorTypes()[0]))},
			want:      llmfleet.ResultErrored, errorType: s.wire().ErrorTypes()[0],
		})
	}
	if s.h.ExpirePrompt != "" {
		its = append(its, item{
			BatchItem: llmfleet.BatchItem{CustomID: lifecycleTag + "-expire_me", Params: s.body(s.h.ExpirePrompt)},
			want:      llmfleet.ResultExpired,
		})
	}
	return its
}

// checkCreated checks a batch of n items just created, and that GetBatch
// finds it.
func (s *suite) checkCreated(t *testing.T, e Env, created *llmfleet.Batch, n int) {
	t.Helper()
	if created.ID == "" || created.Status != llmfleet.BatchInProgress || created.Counts.Total() != n ||
		created.Counts.Processing != n || created.CreatedAt.IsZero() || !created.EndedAt.IsZero() || created.ResultsURL != "" {
		t.Errorf("created batch %+v", created)
	}
	if d := created.ExpiresAt.Sub(created.CreatedAt); d != s.batchExpiry() {
		t.Errorf("expires %v after creation, want %v", d, s.batchExpiry())
	}
	got, err := e.Provider.GetBatch(ctx(t), e.Credential, created.ID)
	if err != nil {
		t.Fatalf("GetBatch: %v", err)
	}
	if got.ID != created.ID || !got.CreatedAt.Equal(created.CreatedAt) || got.Counts.Total() != n {
		t.Errorf("GetBatch %+v, created %+v", got, created)
	}
}

// checkResults checks that each item has the result it expects: a
// message matching its params, or the error of its type.
func (s *suite) checkResults(t *testing.T, its []item, rs map[string]llmfleet.BatchResult) {
	t.Helper()
	for _, it := range its {
		r, ok := rs[it.CustomID]
		if !ok {
			t.Errorf("no result for %s", it.CustomID)
			continue
		}
		if r.Type != it.want {
			t.Errorf("%s: result %s, want %s", it.CustomID, r.Type, it.want)
			continue
		}
		switch r.Type {
		case llmfleet.ResultSucceeded:
			if r.Error != nil {
				t.Errorf("%s: succeeded with an error", it.CustomID)
			}
			m := s.checkMessage(t, it.Params, r.Message)
			if r.Model != m.Model || r.Model == "" || r.Usage != m.Usage {
				t.Errorf("%s: BatchResult model %q, usage %+v; the Message's %q, %+v", it.CustomID, r.Model, r.Usage, m.Model, m.Usage)
			}
		case llmfleet.ResultErrored:
			if r.Error == nil {
				t.Errorf("%s: errored without an error", it.CustomID)
				continue
			}
			wantError(t, it.CustomID, r.Error, s.wire().Status(it.errorType), it.errorType)
		}
	}
}
