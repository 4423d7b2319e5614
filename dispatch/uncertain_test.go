package dispatch

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestUncertainCreateThatHappenedIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.lostAnswer = 1
		d := open(t, f, Policy{BatchMinSize: 3})
		ch := submitAll(t.Context(), d, "k", 0, prompts("p", 3)...)
		for range 3 {
			r := <-ch
			if got := text(t, r); got == "" {
				t.Fatal("empty answer")
			}
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[3]" {
			t.Fatalf("batches %v: want the lost answer's batch adopted, not created again", got)
		}
		if s := d.Stats(); s.BatchesSubmitted != 1 || s.Errors != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestUncertainCreateThatDidNotHappenIsSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.lostCreate = 1
		d := open(t, f, Policy{BatchMinSize: 3})
		ch := submitAll(t.Context(), d, "k", 0, prompts("p", 3)...)
		for range 3 {
			text(t, <-ch)
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[3]" {
			t.Fatalf("batches %v", got)
		}
		if n := f.count("create"); n != 2 {
			t.Fatalf("%d creates, want 2 (one lost, one sent again)", n)
		}
	})
}

// Finding: a list failure after an ambiguous create lost a paid batch
// (the list's *llmfleet.Error was taken for a refusal of the create, the
// batch marked failed, never polled). Failed lookups now prove nothing:
// the reconciler asks again until it finds the batch by its tag.
func TestListFailureAfterUncertainCreateKeepsTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.lostAnswer = 1 // the batch is made, its answer lost
		f.findErrs = 6   // and the lookups fail for a while
		d := open(t, f, Policy{BatchMinSize: 2})
		ch := submitAll(t.Context(), d, "k", 0, "a", "b")
		for range 2 {
			if r := <-ch; r.err != nil {
				t.Fatalf("%s: %v", r.prompt, r.err)
			}
		}
		if n := f.count("create"); n != 1 {
			t.Fatalf("%d creates: the batch was paid once and must be used", n)
		}
		if n := f.count("find"); n != 7 {
			t.Fatalf("%d lookups, want 7 (6 failed, then found)", n)
		}
	})
}

// An uncertain create whose batch never shows up is not concluded missing
// from an early list: only a lookup after the create's deadline (and the
// settling delay) sends its requests again.
func TestUncertainCreateNotConcludedBeforeItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.lostCreate = 1
		d := open(t, f, Policy{BatchMinSize: 2, CreateTimeout: time.Minute, SettleDelay: 3 * time.Second})
		start := time.Now()
		ch := submitAll(t.Context(), d, "k", 0, "a", "b")
		for range 2 {
			text(t, <-ch)
		}
		if n := f.count("create"); n != 2 {
			t.Fatalf("%d creates", n)
		}
		f.mu.Lock()
		second := f.batches[f.order[0]].b.CreatedAt
		f.mu.Unlock()
		if got := second.Sub(start); got < time.Minute+3*time.Second {
			t.Fatalf("sent again %s after the first create: before its deadline and settling delay", got)
		}
	})
}

func TestUnreadableResultsDoNotHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.resultsErr = &llmfleet.Error{StatusCode: 404, Type: "not_found_error", Message: "results archived"}
		d := open(t, f, Policy{BatchMinSize: 1})
		_, err := d.SubmitBatch(t.Context(), 0, req("k", "x")) // no budget
		var be *llmfleet.BatchError
		if !errors.Is(err, llmfleet.ErrResultMissing) || !errors.As(err, &be) || be.BatchID == "" {
			t.Fatalf("err %v", err)
		}
		if n := f.count("results"); n != maxFetchFailures {
			t.Fatalf("%d downloads, want %d", n, maxFetchFailures)
		}
	})
}
