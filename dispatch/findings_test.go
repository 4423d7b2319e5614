package dispatch

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// The tests in this file reproduce what a fault campaign found in the
// first engine (issue 8); each failed there.

// Finding: a 503 answered after the provider created the batch led to a
// second create. Now the answered-uncertain create is found by its tag.
func TestCreateAnswered503AfterMakingTheBatchIsNotSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.answered503 = true
		d := open(t, f, Policy{BatchMinSize: 2})
		ch := submitAll(t.Context(), d, "k", 0, "a", "b")
		for range 2 {
			text(t, <-ch)
		}
		if n := f.count("create"); n != 1 {
			t.Fatalf("%d creates: the batch the 503 hid was paid once and must be used", n)
		}
	})
}

// Finding: a create that reached the provider after the process gave up
// on it was sent again at once. Now nothing is concluded before the
// create's deadline has passed: the late batch is found and used.
func TestCreateThatLandsLateIsNotSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.landAfter = 3 * time.Second
		d := open(t, f, Policy{BatchMinSize: 2})
		ch := submitAll(t.Context(), d, "k", 0, "a", "b")
		for range 2 {
			text(t, <-ch)
		}
		if n := f.count("create"); n != 1 {
			t.Fatalf("%d creates: the late create was paid and must be used", n)
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[2]" {
			t.Fatalf("batches %v", got)
		}
	})
}

// Finding: a refused connection on create was treated as ambiguous and
// the caller waited 74 s. A create that never reached the provider fails
// its callers at once, and is never looked for.
func TestCreateNeverDeliveredFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.createErr = fmt.Errorf("%w: dial tcp 127.0.0.1:1: connect: connection refused", llmfleet.ErrNotDelivered)
		d := open(t, f, Policy{BatchMinSize: 2})
		start := time.Now()
		ch := submitAll(t.Context(), d, "k", time.Hour, prompts("p", 2)...)
		for range 2 {
			r := <-ch
			if !errors.Is(r.err, llmfleet.ErrNotDelivered) {
				t.Fatalf("%s: %v", r.prompt, r.err)
			}
		}
		if waited := time.Since(start); waited > d.pol.BatchWindow {
			t.Fatalf("callers waited %s (virtual) past their flush", waited)
		}
		if f.count("find") != 0 || f.count("list") != 0 {
			t.Fatal("a create that was never delivered was looked for")
		}
	})
}

// Finding: tickets never resolved when every retrieve failed (404/401):
// "submitted" long past the budget, polling without end. Now a batch the
// provider refuses to show maxRefusedPolls times in a row answers its
// requests with that error, and polling stops.
func TestRetrieveThatKeepsFailingResolvesTheRequests(t *testing.T) {
	for _, status := range []int{404, 401} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.never = true
				d := open(t, f, Policy{BatchMinSize: 1})
				f.mu.Lock()
				f.pollErr = &llmfleet.Error{StatusCode: status, Type: "not_found_error", Message: "no such batch"}
				f.mu.Unlock()
				_, err := d.SubmitBatch(t.Context(), 0, req("k", "x")) // no budget: only this can end it
				var pe *llmfleet.Error
				var be *llmfleet.BatchError
				if !errors.As(err, &pe) || pe.StatusCode != status || !errors.As(err, &be) {
					t.Fatalf("err %v", err)
				}
				polls := f.count("get")
				time.Sleep(24 * time.Hour)
				if f.count("get") != polls || polls != maxRefusedPolls {
					t.Fatalf("%d polls, then %d: want %d and no more", polls, f.count("get"), maxRefusedPolls)
				}
				if s := d.Stats(); s.BatchesInFlight != 0 {
					t.Fatalf("stats %+v", s)
				}
			})
		})
	}
}

// A status call that keeps failing without an answer (a lost connection,
// a 500) is retried until well past the batch's expiry, then the requests
// are answered with ErrResultMissing: nothing waits forever.
func TestRetrieveThatNeverAnswersEndsAfterExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.never = true
		d := open(t, f, Policy{BatchMinSize: 1})
		f.mu.Lock()
		f.pollErr = &llmfleet.Error{StatusCode: 500, Type: "api_error", Message: "boom"}
		f.mu.Unlock()
		start := time.Now()
		_, err := d.SubmitBatch(t.Context(), 0, req("k", "x"))
		if !errors.Is(err, llmfleet.ErrResultMissing) {
			t.Fatalf("err %v", err)
		}
		if took := time.Since(start); took < defaultExpiry || took > defaultExpiry+expiryGrace+time.Hour {
			t.Fatalf("gave up after %s", took)
		}
	})
}

// Finding (issue 9): pools mixed models, so a batch ended with its slowest
// model and taught every model in it that model's turnaround. Pools are
// per model now, and a batch teaches only the model it held.
func TestPoolsPerModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(model string) time.Duration {
			if model == "haiku" {
				return 20 * time.Minute
			}
			return time.Minute
		}
		d := open(t, f, Policy{BatchMinSize: 4})
		ch := make(chan result, 8)
		for i := range 4 {
			for _, m := range []string{"haiku", "sonnet"} {
				go func() {
					r := &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "k"}, Body: body(m, fmt.Sprint(m, i))}
					resp, err := d.SubmitBatch(t.Context(), 0, r)
					ch <- result{m, resp, err}
				}()
			}
		}
		for range 8 {
			text(t, <-ch)
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[4 4]" {
			t.Fatalf("batches %v: want one per model", got)
		}
		if p := d.predictor.predict("fake", "sonnet"); p != time.Minute {
			t.Fatalf("sonnet learned %s, want its own 1m", p)
		}
	})
}
