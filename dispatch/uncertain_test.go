package dispatch

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

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

func TestUncertainCreateUnresolvableFailsCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.lostCreate = 1
		f.pollErrs = 1000 // the list never answers
		d := open(t, f, Policy{BatchMinSize: 2})
		ch := submitAll(t.Context(), d, "k", 0, "a", "b")
		for range 2 {
			r := <-ch
			if r.err == nil || errors.Is(r.err, llmfleet.ErrClosed) {
				t.Fatalf("%s: %v", r.prompt, r.err)
			}
		}
		if n := f.count("create"); n != 1 {
			t.Fatalf("%d creates: an unresolved create must not be sent again", n)
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
