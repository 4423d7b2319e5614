package claude

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func items(n int) []llmfleet.BatchItem {
	out := make([]llmfleet.BatchItem, n)
	for i := range out {
		out[i] = llmfleet.BatchItem{CustomID: "r" + string(rune('a'+i)), Params: []byte(`{"model":"m","max_tokens":1,"messages":[]}`)}
	}
	return out
}

func newFake(t *testing.T) (*Provider, *fakeBatches, *sleeps) {
	f := &fakeBatches{now: testNow}
	p, sl := newTest(t, f)
	return p, f, sl
}

// newFakeFirstCreate is newFake whose first create call is answered by
// first instead of by the fake.
func newFakeFirstCreate(t *testing.T, first func(f *fakeBatches, w http.ResponseWriter)) (*Provider, *fakeBatches) {
	f := &fakeBatches{now: testNow}
	var done atomic.Bool
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !done.Swap(true) {
			first(f, w)
			return
		}
		f.ServeHTTP(w, r)
	}))
	return p, f
}

func TestCreateRetriedOnStatus(t *testing.T) {
	p, f := newFakeFirstCreate(t, func(_ *fakeBatches, w http.ResponseWriter) {
		writeError(w, 529, "overloaded_error", "Overloaded")
	})
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil || b.ID != "msgbatch_1" {
		t.Fatalf("%+v %v", b, err)
	}
	if c, l := f.counts(); c != 1 || l != 0 {
		t.Errorf("%d creates, %d lists", c, l)
	}
}

func TestCreateNotRetriedOn400(t *testing.T) {
	p, sl := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, 400, "invalid_request_error", "requests.0.custom_id: duplicate")
	}))
	_, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || len(sl.list()) != 0 {
		t.Errorf("%v", err)
	}
}

func TestCreateRetriedBeforeWrite(t *testing.T) {
	p, f, _ := newFake(t)
	p.HTTPClient = failingDials(1)
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil || b.ID != "msgbatch_1" {
		t.Fatalf("%+v %v", b, err)
	}
	if c, l := f.counts(); c != 1 || l != 0 {
		t.Errorf("%d creates, %d lists", c, l)
	}
}

func TestAmbiguousCreateAdopts(t *testing.T) {
	p, f, sl := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return true, false } // created, answer lost
	// Other batches: older ones of the same size, recent ones of other sizes.
	f.add(3, testNow.Add(-time.Hour))
	for range 150 {
		f.add(5, testNow)
	}
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(3))
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != "msgbatch_152" || b.Counts.Total() != 3 {
		t.Errorf("adopted %+v", b)
	}
	if c, l := f.counts(); c != 1 || l != 2 {
		t.Errorf("%d creates, %d lists", c, l)
	}
	if ds := sl.list(); len(ds) != 1 || ds[0] != DefaultReconcileDelay {
		t.Errorf("sleeps %v", ds)
	}
}

func TestAmbiguousCreateNotCreatedRetriesOnce(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return n > 1, n > 1 } // the first is lost before it is created
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil || b.ID != "msgbatch_1" {
		t.Fatalf("%+v %v", b, err)
	}
	if c, l := f.counts(); c != 2 || l != 1 {
		t.Errorf("%d creates, %d lists", c, l)
	}
}

func TestAmbiguousCreateSecondAttemptAdopts(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return n == 2, false }
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil || b.ID != "msgbatch_1" {
		t.Fatalf("%+v %v", b, err)
	}
	if c, l := f.counts(); c != 2 || l != 2 {
		t.Errorf("%d creates, %d lists", c, l)
	}
}

func TestAmbiguousCreateTwiceNotCreated(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return false, false }
	_, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err == nil || errors.Is(err, ErrAmbiguousCreate) || !strings.Contains(err.Error(), "lists no such batch") {
		t.Fatalf("err %v", err)
	}
	if c, l := f.counts(); c != 2 || l != 2 {
		t.Errorf("%d creates, %d lists", c, l)
	}
}

func TestAmbiguousCreateListFails(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return true, false }
	f.OnList = func(w http.ResponseWriter) bool {
		writeError(w, 403, "permission_error", "no")
		return true
	}
	_, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) {
		t.Fatalf("err %v", err)
	}
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 403 {
		t.Errorf("the list error is not wrapped: %v", err)
	}
	if c, _ := f.counts(); c != 1 {
		t.Errorf("%d creates", c)
	}
}

func TestAmbiguousCreateTwoCandidates(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return true, false }
	f.add(2, testNow.Add(-30*time.Second)) // someone else's, within the skew
	_, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) || !strings.Contains(err.Error(), "2 candidate") {
		t.Fatalf("err %v", err)
	}
	if c, _ := f.counts(); c != 1 {
		t.Errorf("%d creates", c)
	}
}

func TestAmbiguousCreateContextDone(t *testing.T) {
	p, f, _ := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	f.OnCreate = func(n int) (bool, bool) {
		cancel()
		return true, false
	}
	_, err := p.CreateBatch(ctx, testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if _, l := f.counts(); l != 0 {
		t.Errorf("%d lists", l)
	}
}

func TestAmbiguousCreateSkipsHandedOut(t *testing.T) {
	p, f, _ := newFake(t)
	first, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil {
		t.Fatal(err)
	}
	f.OnCreate = func(n int) (bool, bool) { return n > 2, n > 2 } // the second create is lost
	second, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == second.ID || second.ID != "msgbatch_2" {
		t.Errorf("first %s, second %s", first.ID, second.ID)
	}
	if c, l := f.counts(); c != 3 || l != 1 {
		t.Errorf("%d creates, %d lists", c, l)
	}
}

// A reconciliation waits for the other creates of the same size in flight,
// whose batches it would otherwise mistake for its own.
func TestAmbiguousCreateWaitsForInflight(t *testing.T) {
	p, f, _ := newFake(t)
	aIn, release := make(chan struct{}), make(chan struct{})
	f.OnCreate = func(n int) (bool, bool) { return n != 2, n != 2 } // the second create is lost
	f.Block = func(n int) {
		if n == 1 {
			close(aIn)
			<-release
		}
	}
	var waited atomic.Bool
	p.testHookReconcileWait = func() {
		if !waited.Swap(true) {
			close(release)
		}
	}
	type res struct {
		b   *llmfleet.Batch
		err error
	}
	aDone := make(chan res)
	go func() {
		b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
		aDone <- res{b, err}
	}()
	<-aIn
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	a := <-aDone
	if a.err != nil || err != nil {
		t.Fatal(a.err, err)
	}
	if !waited.Load() || a.b.ID != "msgbatch_1" || b.ID != "msgbatch_2" {
		t.Errorf("waited %v, a %s, b %s", waited.Load(), a.b.ID, b.ID)
	}
	if c, _ := f.counts(); c != 3 {
		t.Errorf("%d creates", c)
	}
}

// After a create whose outcome stayed unknown, a lone candidate of the same
// size may be that create's batch, so it is not adopted.
func TestAmbiguousCreateUnresolvedPeer(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnCreate = func(n int) (bool, bool) { return n == 1, false }
	var listOK atomic.Bool
	f.OnList = func(w http.ResponseWriter) bool {
		if listOK.Load() {
			return false
		}
		writeError(w, 500, "api_error", "down")
		return true
	}
	_, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) {
		t.Fatalf("first: %v", err)
	}
	listOK.Store(true)
	_, err = p.CreateBatch(context.Background(), testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) || !strings.Contains(err.Error(), "other ambiguous") {
		t.Fatalf("second: %v", err)
	}
	// A create of another size is not affected.
	f.OnCreate = nil
	if _, err := p.CreateBatch(context.Background(), testCred, nil, items(3)); err != nil {
		t.Fatal(err)
	}
}

// A create answered with an unreadable body made a batch whose id is
// unknown: the caller is told it may exist, and a later ambiguous create of
// the same size does not adopt it.
func TestCreateUnreadableAnswer(t *testing.T) {
	f := &fakeBatches{now: testNow}
	var n atomic.Int32
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && n.Add(1) == 1 {
			f.mu.Lock()
			f.add(2, testNow)
			f.mu.Unlock()
			w.Write([]byte(`{"id":`))
			return
		}
		f.ServeHTTP(w, r)
	}))
	f.OnCreate = func(int) (bool, bool) { return false, false }
	_, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) {
		t.Fatalf("first: %v", err)
	}
	_, err = p.CreateBatch(context.Background(), testCred, nil, items(2))
	if !errors.Is(err, ErrAmbiguousCreate) || !strings.Contains(err.Error(), "other ambiguous") {
		t.Errorf("second: %v", err)
	}
}

// A 504 after the body was sent may hide a batch that was created: the
// create is reconciled, not sent again.
func TestCreateGatewayTimeoutReconciles(t *testing.T) {
	p, f := newFakeFirstCreate(t, func(f *fakeBatches, w http.ResponseWriter) {
		f.mu.Lock()
		f.creates++
		f.add(2, f.now) // created, but the gateway gave up waiting
		f.mu.Unlock()
		writeError(w, 504, "timeout_error", "Request timed out")
	})
	b, err := p.CreateBatch(context.Background(), testCred, nil, items(2))
	if err != nil || b.ID != "msgbatch_1" {
		t.Fatalf("%+v %v", b, err)
	}
	if c, l := f.counts(); c != 1 || l != 1 {
		t.Errorf("%d creates, %d lists; want the 504 reconciled, not resent", c, l)
	}
}
