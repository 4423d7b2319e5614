package providertest

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func query(tag string, size int, since time.Time) llmfleet.BatchQuery {
	return llmfleet.BatchQuery{Tag: tag, Since: since, Size: size}
}

// find calls FindBatch and checks its answer: want is the batch created
// with q.Tag, nil if there is none. running says whether a batch that may
// carry the tag is still in progress, when the provider may answer
// ErrUndetermined instead, if it cannot read the tag of a running batch.
// No other batch than want is ever accepted.
func (s *suite) find(t *testing.T, e Env, q llmfleet.BatchQuery, want *llmfleet.Batch, running bool) {
	t.Helper()
	got, err := e.Provider.FindBatch(ctx(t), e.Credential, q)
	wantID := "none"
	if want != nil {
		wantID = want.ID
	}
	switch {
	case errors.Is(err, llmfleet.ErrUndetermined):
		if !running {
			t.Errorf("FindBatch(%s): %v, though every batch ended (want %s)", q.Tag, err, wantID)
		}
		if got != nil {
			t.Errorf("FindBatch(%s) returned %s with %v", q.Tag, got.ID, err)
		}
	case err != nil:
		t.Errorf("FindBatch(%s): %v (want %s)", q.Tag, err, wantID)
	case got == nil:
		if want != nil {
			t.Errorf("FindBatch(%s) answered that no batch carries the tag; %s does", q.Tag, want.ID)
		}
	case want == nil || got.ID != want.ID:
		t.Errorf("FindBatch(%s) returned %s, a batch created with another tag (want %s)", q.Tag, got.ID, wantID)
	case got.Counts.Total() != want.Counts.Total() || !got.CreatedAt.Equal(want.CreatedAt):
		t.Errorf("FindBatch(%s) returned %+v, created as %+v", q.Tag, got, want)
	}
}

func (s *suite) batchFind(t *testing.T) {
	e := s.env(t)
	since := e.now()
	// Three batches of one size, one of another; their tags begin alike,
	// and the oldest one's tag begins the others'.
	batches := map[string]*llmfleet.Batch{}
	for _, c := range []struct {
		tag  string
		size int
	}{{"find", 3}, {"findA", 3}, {"findB", 3}, {"findD", 2}} {
		b, err := create(t, e, c.tag, s.items(c.tag, c.size))
		if err != nil {
			t.Fatalf("CreateBatch(%s): %v", c.tag, err)
		}
		batches[c.tag] = b
	}
	f, a, b := batches["find"], batches["findA"], batches["findB"]
	check := func(running bool) {
		t.Helper()
		for tag, x := range batches {
			s.find(t, e, query(tag, x.Counts.Total(), since), x, running)
		}
		// Tags never used: one that begins the others, one they begin.
		s.find(t, e, query("fin", 3, since), nil, running)
		s.find(t, e, query("findA_2", 3, since), nil, running)
		s.find(t, e, query("findC", 2, since), nil, running)
	}
	check(true)
	if e.Advance == nil {
		return
	}
	for _, x := range batches {
		waitEnded(t, e, x.ID)
	}
	check(false)
	// Known names batches of other tags, which need not be looked into.
	q := query("findA", 3, since)
	q.Known = func(id string) bool { return id == b.ID }
	s.find(t, e, q, a, false)
	q = query("findB", 3, since)
	q.Known = func(id string) bool { return id == a.ID || id == f.ID }
	s.find(t, e, q, b, false)
}

// uncertain checks that err is an *llmfleet.UncertainError, answered or
// not as want says.
func uncertain(t *testing.T, what string, err error, answered bool) {
	t.Helper()
	var ue *llmfleet.UncertainError
	switch {
	case !errors.As(err, &ue):
		t.Errorf("%s: got %v (%T), want an *llmfleet.UncertainError", what, err, err)
	case ue.Answered != answered:
		t.Errorf("%s: UncertainError.Answered %v, want %v: %v", what, ue.Answered, answered, err)
	case errors.Is(err, llmfleet.ErrNotDelivered):
		t.Errorf("%s: uncertain and not delivered: %v", what, err)
	}
}

func (s *suite) batchCreateDroppedResponse(t *testing.T) {
	e := s.env(t)
	if e.DropCreateResponse == nil {
		t.Skip("Env.DropCreateResponse is nil")
	}
	since := e.now()
	// A batch of the same size first: FindBatch must tell them apart.
	before, err := create(t, e, "before", s.items("before", 3))
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	e.DropCreateResponse()
	_, err = create(t, e, "dropped", s.items("dropped", 3))
	uncertain(t, "CreateBatch after a lost answer", err, false)
	var dropped *llmfleet.Batch
	for _, b := range s.wantBatches(t, e, 2) {
		if b.ID != before.ID {
			dropped = &b
		}
	}
	if dropped == nil {
		t.Fatal("the upstream holds no batch for the dropped create")
	}
	s.find(t, e, query("dropped", 3, since), dropped, true)
	s.find(t, e, query("before", 3, since), before, true)
	if e.Advance == nil {
		return
	}
	waitEnded(t, e, dropped.ID)
	waitEnded(t, e, before.ID)
	s.find(t, e, query("dropped", 3, since), dropped, false)
	s.find(t, e, query("before", 3, since), before, false)
}

func (s *suite) batchCreateDroppedRequest(t *testing.T) {
	e := s.env(t)
	if e.DropCreateRequest == nil {
		t.Skip("Env.DropCreateRequest is nil")
	}
	since := e.now()
	e.DropCreateRequest()
	_, err := create(t, e, "lost", s.items("lost", 3))
	uncertain(t, "CreateBatch after a lost request", err, false)
	s.wantBatches(t, e, 0)
	s.find(t, e, query("lost", 3, since), nil, false)
	// Proven not created, the batch may be created again.
	b, err := create(t, e, "lost", s.items("lost", 3))
	if err != nil {
		t.Fatalf("CreateBatch again: %v", err)
	}
	s.find(t, e, query("lost", 3, since), b, true)
}

// batchCreateFailed checks how a create answered with an error is
// classified: a 5xx that is not one of the Wire's refusals (Anthropic's
// 529) leaves open whether the batch was created; a refusal does not, and
// a provider may send it again.
func (s *suite) batchCreateFailed(t *testing.T) {
	refusals := s.wire().Refusals()
	for _, status := range append(slices.Clone(refusals), 500, 503) {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			e := s.env(t)
			if e.FailCreate == nil {
				t.Skip("Env.FailCreate is nil")
			}
			since := e.now()
			e.FailCreate(status)
			b, err := create(t, e, "failed", s.items("failed", 2))
			var ue *llmfleet.UncertainError
			switch {
			case !slices.Contains(refusals, status):
				uncertain(t, "CreateBatch answered "+strconv.Itoa(status), err, true)
				var pe *llmfleet.Error
				if !errors.As(err, &pe) || pe.StatusCode != status {
					t.Errorf("the %d answer is not wrapped: %v", status, err)
				}
			case errors.As(err, &ue):
				t.Errorf("a refusal (%d) is not uncertain: %v", status, err)
			case err == nil:
				// Sent again after the refusal: created once.
				if status == 400 {
					t.Errorf("CreateBatch succeeded after a 400")
				}
				if bs := s.wantBatches(t, e, 1); len(bs) == 1 && bs[0].ID != b.ID {
					t.Errorf("CreateBatch returned %s, the upstream holds %s", b.ID, bs[0].ID)
				}
				return
			default:
				wantError(t, "CreateBatch answered "+strconv.Itoa(status), err, status, "")
			}
			s.wantBatches(t, e, 0)
			s.find(t, e, query("failed", 2, since), nil, false)
		})
	}
}
