package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func (s *suite) addGet(t *testing.T) {
	st := s.store(t)
	rs := []*llmfleet.StoredRequest{request(1), request(2)}
	s.add(t, st, rs...)
	for _, r := range rs {
		checkRequest(t, s.get(t, st, r.ID), r)
	}
	q, b := s.pending(t, st)
	if got := ids(q); fmt.Sprint(got) != fmt.Sprint(ids(rs)) || len(b) != 0 {
		t.Errorf("Pending: queued %v batches %d, want %v and none", got, len(b), ids(rs))
	}
}

// addMinimal stores a request without header, budget or deadline, and a
// state other than queued, which AddRequest must ignore.
func (s *suite) addMinimal(t *testing.T) {
	st := s.store(t)
	r := &llmfleet.StoredRequest{
		ID:           "lfr_minimal",
		Provider:     "anthropic",
		CredentialID: "cred_x",
		Body:         []byte(`{}`),
		Model:        "m",
		AcceptedAt:   base,
		State:        llmfleet.RequestDone,
	}
	s.add(t, st, r)
	checkRequest(t, s.get(t, st, r.ID), with(r, llmfleet.RequestQueued, "", "", nil))
}

func (s *suite) addDuplicate(t *testing.T) {
	st := s.store(t)
	r := request(1)
	s.add(t, st, r)
	dup := request(2)
	dup.ID = r.ID
	if err := st.AddRequest(ctx(t), dup); !errors.Is(err, llmfleet.ErrExists) {
		t.Errorf("AddRequest of an id stored already: %v, want an error wrapping llmfleet.ErrExists", err)
	}
	checkRequest(t, s.get(t, st, r.ID), r)
	q, _ := s.pending(t, st)
	if len(q) != 1 {
		t.Errorf("Pending: %d queued, want 1", len(q))
	}
}

// addCanceled: a request whose AddRequest failed must not be stored,
// else it would be submitted after a restart though its caller was told it
// failed.
func (s *suite) addCanceled(t *testing.T) {
	st := s.store(t)
	c, cancel := context.WithCancel(ctx(t))
	cancel()
	r := request(1)
	err := st.AddRequest(c, r)
	if err == nil {
		t.Fatal("AddRequest with a canceled context: no error")
	}
	if _, err := st.GetRequest(ctx(t), r.ID); err == nil {
		t.Error("a request whose AddRequest failed was stored")
	}
}

// copies checks that neither what was passed to a store nor what it
// returned aliases what it keeps.
func (s *suite) copies(t *testing.T) {
	st := s.store(t)
	r := request(1)
	want := request(1)
	s.add(t, st, r)
	r.Body[2] = 'X'
	r.Header.Set("Anthropic-Version", "changed")
	got := s.get(t, st, r.ID)
	checkRequest(t, got, want)
	got.Body[2] = 'Y'
	got.Header.Set("Anthropic-Version", "changed")
	checkRequest(t, s.get(t, st, r.ID), want)

	res := result(1)
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{r.ID: res})); err != nil {
		t.Fatal(err)
	}
	res.Body[2] = 'X'
	got = s.get(t, st, r.ID)
	checkResult(t, r.ID, got.Result, result(1))
	got.Result.Body[2] = 'Y'
	checkResult(t, r.ID, s.get(t, st, r.ID).Result, result(1))

	r2 := request(2)
	s.add(t, st, r2)
	eres := errorResult()
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{r2.ID: eres})); err != nil {
		t.Fatal(err)
	}
	eres.Err.Body[2], eres.Err.Message = 'X', "changed"
	got = s.get(t, st, r2.ID)
	checkResult(t, r2.ID, got.Result, errorResult())
	got.Result.Err.Body[2], got.Result.Err.Message = 'Y', "changed"
	checkResult(t, r2.ID, s.get(t, st, r2.ID).Result, errorResult())

	sealed := []byte("sealed-bytes")
	if err := st.PutCredential(ctx(t), "cred_a", sealed); err != nil {
		t.Fatal(err)
	}
	sealed[0] = 'X'
	c, err := st.GetCredential(ctx(t), "cred_a")
	if err != nil || string(c) != "sealed-bytes" {
		t.Fatalf("GetCredential = %q, %v", c, err)
	}
	c[0] = 'Y'
	if c, _ := st.GetCredential(ctx(t), "cred_a"); string(c) != "sealed-bytes" {
		t.Errorf("GetCredential after changing a returned copy = %q", c)
	}
}

func (s *suite) notFound(t *testing.T) {
	st := s.store(t)
	s.add(t, st, request(1))
	_, err := st.GetRequest(ctx(t), "lfr_unknown")
	isNotFound(t, "GetRequest", err)
	isNotFound(t, "RecordCreated", st.RecordCreated(ctx(t), "lfb_unknown", "msgbatch_x", base))
	isNotFound(t, "RecordCreateFailed", st.RecordCreateFailed(ctx(t), "lfb_unknown", true))
	isNotFound(t, "RecordEnded", st.RecordEnded(ctx(t), "lfb_unknown", base))
	isNotFound(t, "ResolveBatch", st.ResolveBatch(ctx(t), "lfb_unknown"))
	_, err = st.GetCredential(ctx(t), "cred_unknown")
	isNotFound(t, "GetCredential", err)

	// A call naming an unknown request changes nothing.
	_, err = st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{"lfr_0001": result(1), "lfr_unknown": result(2)}))
	isNotFound(t, "CompleteRequests", err)
	err = st.RecordIntent(ctx(t), batch(1), map[string]string{"lfr_0001": "a", "lfr_unknown": "b"})
	isNotFound(t, "RecordIntent", err)
	checkRequest(t, s.get(t, st, "lfr_0001"), request(1))
	q, b := s.pending(t, st)
	if len(q) != 1 || len(b) != 0 {
		t.Errorf("Pending after failed calls: %d queued %d batches, want 1 and 0", len(q), len(b))
	}
}

// concurrentAdd: many callers at once, as group commit sees them; every
// request is stored.
func (s *suite) concurrentAdd(t *testing.T) {
	st := s.store(t)
	const callers, each = 32, 8
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				r := request(c*each + i)
				if err := st.AddRequest(ctx(t), r); err != nil {
					t.Errorf("AddRequest(%s): %v", r.ID, err)
					return
				}
				// Read your write, while others write.
				if _, err := st.GetRequest(ctx(t), r.ID); err != nil {
					t.Errorf("GetRequest(%s) after AddRequest: %v", r.ID, err)
				}
			}
		})
	}
	wg.Wait()
	q, _ := s.pending(t, st)
	if len(q) != callers*each {
		t.Fatalf("Pending: %d queued, want %d", len(q), callers*each)
	}
	for i, r := range q {
		checkRequest(t, r, request(i))
	}
}

// concurrentLifecycle: batches go through their whole life concurrently
// with new requests arriving.
func (s *suite) concurrentLifecycle(t *testing.T) {
	st := s.store(t)
	const batches, size = 8, 4
	var wg sync.WaitGroup
	for b := range batches {
		wg.Go(func() {
			rs := make([]*llmfleet.StoredRequest, size)
			for i := range rs {
				rs[i] = request(b*size + i)
			}
			if err := s.lifeOf(t, st, batch(b), rs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	q, pb := s.pending(t, st)
	if len(q) != 0 || len(pb) != 0 {
		t.Errorf("Pending: %d queued %d batches, want none", len(q), len(pb))
	}
	for i := range batches * size {
		r := request(i)
		checkRequest(t, s.get(t, st, r.ID), with(r, llmfleet.RequestDone, batch(i/size).ID, fmt.Sprintf("r%d", i%size), result(i)))
	}
}

// lifeOf takes requests through add, intent, created, ended, complete and
// resolve.
func (s *suite) lifeOf(t *testing.T, st llmfleet.Store, b *llmfleet.StoredBatch, rs []*llmfleet.StoredRequest) error {
	c := ctx(t)
	for _, r := range rs {
		if err := st.AddRequest(c, r); err != nil {
			return err
		}
	}
	if err := st.RecordIntent(c, b, customIDs(rs...)); err != nil {
		return fmt.Errorf("RecordIntent(%s): %w", b.ID, err)
	}
	if err := st.RecordCreated(c, b.ID, "msgbatch_"+b.ID, base.Add(time.Hour)); err != nil {
		return fmt.Errorf("RecordCreated(%s): %w", b.ID, err)
	}
	if err := st.RecordEnded(c, b.ID, base.Add(2*time.Hour)); err != nil {
		return fmt.Errorf("RecordEnded(%s): %w", b.ID, err)
	}
	results := map[string]*llmfleet.StoredResult{}
	for _, r := range rs {
		var i int
		fmt.Sscanf(r.ID, "lfr_%d", &i)
		results[r.ID] = result(i)
	}
	if _, err := st.CompleteRequests(c, done(results)); err != nil {
		return fmt.Errorf("CompleteRequests(%s): %w", b.ID, err)
	}
	if err := st.ResolveBatch(c, b.ID); err != nil {
		return fmt.Errorf("ResolveBatch(%s): %w", b.ID, err)
	}
	return nil
}

// sentSync returns request i as added by a process that sends it sync at
// once: State submitted, no batch.
func sentSync(i int) *llmfleet.StoredRequest {
	r := request(i)
	r.State = llmfleet.RequestSubmitted
	return r
}

// addSentSync: a request added submitted without a batch is stored so,
// never goes into a batch (RecordIntent refuses it), is listed by Pending
// among the queued ones, in acceptance order, until it is completed; one
// added submitted in a batch is stored queued.
func (s *suite) addSentSync(t *testing.T) {
	st := s.store(t)
	s.add(t, st, request(2), sentSync(1), sentSync(3))
	checkRequest(t, s.get(t, st, "lfr_0001"), sentSync(1))
	if err := st.RecordIntent(ctx(t), batch(1), customIDs(sentSync(1))); err == nil {
		t.Error("RecordIntent took a request sent sync into a batch")
	}
	q, bs := s.pending(t, st)
	if fmt.Sprint(ids(q)) != "[lfr_0001 lfr_0002 lfr_0003]" || len(bs) != 0 {
		t.Fatalf("Pending: queued %v, %d batches; want lfr_0001..3, none", ids(q), len(bs))
	}
	if q[0].State != llmfleet.RequestSubmitted || q[1].State != llmfleet.RequestQueued {
		t.Errorf("Pending states %s, %s; want submitted, queued", q[0].State, q[1].State)
	}
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{"lfr_0003": result(3)})); err != nil {
		t.Fatal(err)
	}
	if q, _ = s.pending(t, st); fmt.Sprint(ids(q)) != "[lfr_0001 lfr_0002]" {
		t.Errorf("Pending after completing lfr_0003: %v", ids(q))
	}
	// Submitted in a batch is no state to add a request in: queued.
	inBatch := with(request(5), llmfleet.RequestSubmitted, batch(1).ID, "x-1", nil)
	s.add(t, st, inBatch)
	checkRequest(t, s.get(t, st, inBatch.ID), request(5))
}
