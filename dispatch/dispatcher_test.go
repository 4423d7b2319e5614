package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

func body(model, prompt string) []byte {
	return []byte(fmt.Sprintf(`{"model":%q,"max_tokens":16,"messages":[{"role":"user","content":%q}],"stream":true,"x_unknown":1.50}`, model, prompt))
}

func req(key, prompt string) *llmfleet.Request {
	return &llmfleet.Request{Credential: llmfleet.Credential{APIKey: key}, Body: body("m1", prompt)}
}

func open(t *testing.T, f *fakeProvider, pol Policy) *Dispatcher {
	t.Helper()
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Policy: pol}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		d.Close(ctx)
	})
	return d
}

type result struct {
	prompt string
	resp   *llmfleet.Response
	err    error
}

// submitAll submits one batched request per prompt concurrently and
// returns a channel of their results.
func submitAll(ctx context.Context, d *Dispatcher, key string, budget time.Duration, prompts ...string) <-chan result {
	ch := make(chan result, len(prompts))
	for _, p := range prompts {
		go func() {
			submit := d.Submit
			if budget == 0 {
				submit = d.SubmitBatch // no budget: patient work, batched
			}
			resp, err := submit(ctx, budget, req(key, p))
			ch <- result{p, resp, err}
		}()
	}
	return ch
}

func prompts(prefix string, n int) []string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("%s-%d", prefix, i))
	}
	return ps
}

func text(t *testing.T, r result) string {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", r.prompt, r.err)
	}
	return string(r.resp.Body)
}

func TestRoutingByBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := open(t, newFake(), Policy{NoRescue: true}) // the p90 must fit; no exploring
		r := req("k", "x")
		for _, c := range []struct {
			budget time.Duration
			want   llmfleet.Route
		}{
			{0, llmfleet.RouteSync},                // no budget: DefaultBudget 0, sync
			{time.Second, llmfleet.RouteSync},      // under the sync max
			{5 * time.Second, llmfleet.RouteSync},  // at the sync max
			{60 * time.Second, llmfleet.RouteSync}, // under prior 120s + slack
			{130 * time.Second, llmfleet.RouteBatch},
			{10 * time.Minute, llmfleet.RouteBatch},
		} {
			if got := d.Plan(c.budget, r); got != c.want {
				t.Errorf("Plan(%s) = %s, want %s", c.budget, got, c.want)
			}
		}
	})
}

func TestRoutingLearnsTurnaround(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(model string) time.Duration {
			if model == "slow" {
				return 20 * time.Minute
			}
			return 10 * time.Second
		}
		d := open(t, f, Policy{BatchMinSize: 1, NoRescue: true}) // routes by p90, no exploring
		fast := &llmfleet.Request{Body: body("fast", "a")}
		slow := &llmfleet.Request{Body: body("slow", "a")}
		if d.Plan(10*time.Minute, slow) != llmfleet.RouteBatch || d.Plan(time.Minute, fast) != llmfleet.RouteSync {
			t.Fatal("prior not used")
		}
		for i := range 5 {
			for _, r := range []*llmfleet.Request{fast, slow} {
				if _, err := d.SubmitBatch(t.Context(), 0, r); err != nil {
					t.Fatal(i, err)
				}
			}
		}
		if got := d.Plan(10*time.Minute, slow); got != llmfleet.RouteSync {
			t.Errorf("slow model after 20m turnarounds: %s, want sync", got)
		}
		if got := d.Plan(time.Minute, fast); got != llmfleet.RouteBatch {
			t.Errorf("fast model after 10s turnarounds: %s, want batch", got)
		}
		// Learned per model: the unseen model still uses the prior.
		if got := d.Plan(time.Minute, &llmfleet.Request{Body: body("other", "a")}); got != llmfleet.RouteSync {
			t.Errorf("unseen model: %s, want sync", got)
		}
	})
}

// With rescue, a model without observed turnarounds is explored: one
// request whose budget leaves room for its rescue goes to batch to learn
// the model's turnaround, one at a time, whatever the prior says.
func TestRoutingExploresAnUnseenModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 20 * time.Second }
		d := open(t, f, Policy{BatchMinSize: 1, TurnaroundPrior: 2 * time.Minute})
		r := &llmfleet.Request{Body: body("new", "a")}
		// Issue 21: an exploration its budget cannot plausibly keep (a
		// minute less the rescue's 32s and the 10s slack: 18s, under half
		// of the 2m prior) is no exploration: it would be rescued and
		// paid twice.
		if got := d.Plan(time.Minute, r); got != llmfleet.RouteSync {
			t.Fatalf("a budget far below the prior: %s, want sync", got)
		}
		if got := d.Plan(2*time.Minute, r); got != llmfleet.RouteBatch {
			t.Fatalf("first request of an unseen model: %s, want batch (exploring)", got)
		}
		if got := d.Plan(2*time.Minute, r); got != llmfleet.RouteSync {
			t.Fatalf("while the exploration is out: %s, want sync", got)
		}
		if _, err := d.SubmitBatch(t.Context(), 2*time.Minute, r); err != nil {
			t.Fatal(err)
		}
		if got := d.Plan(2*time.Minute, r); got != llmfleet.RouteBatch {
			t.Fatalf("after a 20s turnaround was learned: %s, want batch", got)
		}
		if got := d.Plan(10*time.Second, r); got != llmfleet.RouteSync {
			t.Fatalf("a budget under the rescue reserve: %s, want sync", got)
		}
	})
}

func TestSubmitSyncRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{})
		resp, err := d.Submit(t.Context(), time.Second, req("k", "hello"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Route != llmfleet.RouteSync || !strings.Contains(string(resp.Body), "re: hello") {
			t.Fatalf("got %+v", resp)
		}
		if s := d.Stats(); s.SyncCalls != 1 || s.BatchedCalls != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestFlushAtMinSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{})
		start := time.Now()
		ch := submitAll(t.Context(), d, "k", 0, prompts("p", 10)...)
		synctest.Wait()
		if got := f.batchSizes(); len(got) != 1 || got[0] != 10 {
			t.Fatalf("batches %v, want one of 10 at once", got)
		}
		if time.Since(start) != 0 {
			t.Fatal("time passed before the flush")
		}
		for range 10 {
			r := <-ch
			if !strings.Contains(text(t, r), "re: "+r.prompt) {
				t.Errorf("%s got %s", r.prompt, r.resp.Body)
			}
		}
	})
}

func TestFlushAtWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchWindow: 30 * time.Second})
		start := time.Now()
		submitAll(t.Context(), d, "k", 0, prompts("p", 3)...)
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if n := len(f.batchSizes()); n != 0 {
			t.Fatalf("flushed before the window: %d", n)
		}
		if s := d.Stats(); s.QueueDepth != 3 {
			t.Fatalf("queue depth %d", s.QueueDepth)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := f.batchSizes(); len(got) != 1 || got[0] != 3 {
			t.Fatalf("batches %v after %s", got, time.Since(start))
		}
		if s := d.Stats(); s.QueueDepth != 0 || s.BatchesInFlight != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestFlushAtMaxSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.maxReq = 4 // the provider's own cap, under BatchMinSize
		d := open(t, f, Policy{BatchMinSize: 10, BatchMaxSize: 100})
		submitAll(t.Context(), d, "k", 0, prompts("p", 9)...)
		synctest.Wait()
		if got := f.batchSizes(); fmt.Sprint(got) != "[4 4]" {
			t.Fatalf("batches %v, want [4 4] with one left pooled", got)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := f.batchSizes(); fmt.Sprint(got) != "[4 4 1]" {
			t.Fatalf("batches %v", got)
		}
	})
}

func TestFlushEarlyForTightestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchWindow: 5 * time.Minute, NoRescue: true}) // prior 120s, slack 10s, no rescue reserve
		start := time.Now()
		submitAll(t.Context(), d, "k", 0, "patient")
		submitAll(t.Context(), d, "k", 150*time.Second, "tight") // must go out by 150-130 = 20s
		time.Sleep(19 * time.Second)
		synctest.Wait()
		if n := len(f.batchSizes()); n != 0 {
			t.Fatal("flushed too early")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := f.batchSizes(); fmt.Sprint(got) != "[2]" {
			t.Fatalf("batches %v at %s, want both requests at 20s", got, time.Since(start))
		}
	})
}

func TestPoolsPerCredential(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{})
		a := submitAll(t.Context(), d, "key-a", 0, prompts("a", 6)...)
		b := submitAll(t.Context(), d, "key-b", 0, prompts("b", 6)...)
		for range 6 {
			ra, rb := <-a, <-b
			text(t, ra)
			text(t, rb)
			if ra.resp.BatchID == rb.resp.BatchID {
				t.Fatal("two API keys shared a batch")
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.order) != 2 {
			t.Fatalf("%d batches, want 2", len(f.order))
		}
		for _, fb := range f.batches {
			if len(fb.items) != 6 {
				t.Errorf("batch %s has %d items", fb.b.ID, len(fb.items))
			}
		}
	})
}

func TestPoolsPerBetaHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchMinSize: 2})
		var wg sync.WaitGroup
		for i, beta := range []string{"a", "b", "a", "b"} {
			wg.Go(func() {
				r := req("k", fmt.Sprint(i))
				r.Header = map[string][]string{"Anthropic-Beta": {beta}}
				if _, err := d.SubmitBatch(t.Context(), 0, r); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := f.batchSizes(); fmt.Sprint(got) != "[2 2]" {
			t.Fatalf("batches %v", got)
		}
	})
}

func TestResultsMatchedByCustomID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchMinSize: 50, BatchMaxSize: 50})
		ps := prompts("q", 50)
		ch := submitAll(t.Context(), d, "k", 0, ps...)
		seen := map[string]bool{}
		for range ps {
			r := <-ch
			got := text(t, r)
			if !strings.Contains(got, `"re: `+r.prompt+`"`) {
				t.Fatalf("%s got someone else's answer: %s", r.prompt, got)
			}
			if r.resp.Route != llmfleet.RouteBatch || r.resp.BatchID == "" || r.resp.CustomID == "" {
				t.Fatalf("response %+v", r.resp)
			}
			seen[r.resp.CustomID] = true
		}
		if len(seen) != 50 {
			t.Fatalf("%d distinct custom ids", len(seen))
		}
		// The body went upstream byte for byte, less "stream".
		f.mu.Lock()
		p := string(f.batches[f.order[0]].items[0].Params)
		f.mu.Unlock()
		if strings.Contains(p, "stream") || !strings.Contains(p, `"x_unknown":1.50`) {
			t.Fatalf("params %s", p)
		}
	})
}

func TestResultTypes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchMinSize: 5})
		ch := submitAll(t.Context(), d, "k", 0, "ok", "[errored]", "[canceled]", "[expired]", "[missing]")
		got := map[string]result{}
		for range 5 {
			r := <-ch
			got[r.prompt] = r
		}
		if got["ok"].err != nil {
			t.Errorf("ok: %v", got["ok"].err)
		}
		var pe *llmfleet.Error
		if !errors.As(got["[errored]"].err, &pe) || pe.StatusCode != 400 || pe.Type != "invalid_request_error" {
			t.Errorf("errored: %v", got["[errored]"].err)
		}
		for p, want := range map[string]error{"[canceled]": llmfleet.ErrBatchCanceled, "[expired]": llmfleet.ErrBatchExpired, "[missing]": llmfleet.ErrResultMissing} {
			if !errors.Is(got[p].err, want) {
				t.Errorf("%s: %v, want %v", p, got[p].err, want)
			}
		}
		if s := d.Stats(); s.Errors != 4 || s.BatchesInFlight != 0 || s.BatchesEnded != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestCreateFailureFailsTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		cause := &llmfleet.Error{StatusCode: 401, Type: "authentication_error", Message: "invalid x-api-key"}
		f.createErr = cause
		d := open(t, f, Policy{BatchMinSize: 3})
		ch := submitAll(t.Context(), d, "k", 0, prompts("p", 3)...)
		for range 3 {
			r := <-ch
			var pe *llmfleet.Error
			if !errors.As(r.err, &pe) || pe != cause {
				t.Fatalf("%s: %v", r.prompt, r.err)
			}
		}
		// The next batch works.
		ch = submitAll(t.Context(), d, "k", 0, prompts("p", 3)...)
		for range 3 {
			text(t, <-ch)
		}
	})
}

func TestPollFailuresAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.pollErrs = 3
		d := open(t, f, Policy{BatchMinSize: 2})
		ch := submitAll(t.Context(), d, "k", 0, "a", "b")
		text(t, <-ch)
		text(t, <-ch)
	})
}

func TestManyBatchesInFlightPolledTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchMinSize: 10})
		ch := submitAll(t.Context(), d, "k", 0, prompts("p", 50)...)
		synctest.Wait()
		if s := d.Stats(); s.BatchesInFlight != 5 {
			t.Fatalf("%d batches in flight, want 5 at once", s.BatchesInFlight)
		}
		for range 50 {
			text(t, <-ch)
		}
		polls := f.count("list") + f.count("get")
		// Five batches ending at 60s, polled every 5s: each poll is one
		// list call for all five, so they cost what one batch's do.
		if polls > 60/5+1 || f.count("get") != 0 {
			t.Errorf("%d poll calls for 5 batches", polls)
		}
		t.Logf("5 batches: %d creates, %d lists, %d gets, %d results", f.count("create"), f.count("list"), f.count("get"), f.count("results"))
	})
}

func TestCallerLeavesPoolBeforeSubmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := &Dispatcher{Providers: []llmfleet.Provider{f}}
		var mu sync.Mutex
		var entries []llmfleet.LedgerEntry
		d.Observe = func(e llmfleet.LedgerEntry, _ bool) {
			mu.Lock()
			entries = append(entries, e)
			mu.Unlock()
		}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		ctx, cancel := context.WithCancel(t.Context())
		gone := submitAll(ctx, d, "k", 0, "leaver")
		stay := submitAll(t.Context(), d, "k", 0, "stayer")
		synctest.Wait()
		cancel()
		if r := <-gone; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("leaver: %v", r.err)
		}
		if q := d.Stats().QueueDepth; q != 1 {
			t.Fatalf("queue depth %d", q)
		}
		text(t, <-stay)
		if got := f.batchSizes(); fmt.Sprint(got) != "[1]" {
			t.Fatalf("batches %v: the leaver was submitted", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(entries) != 2 || entries[0].Outcome != "caller_canceled" || entries[1].Outcome != "ok" {
			t.Fatalf("ledger entries %+v", entries)
		}
	})
}

func TestCallerLeavesAfterSubmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchMinSize: 2})
		ctx, cancel := context.WithCancel(t.Context())
		gone := submitAll(ctx, d, "k", 0, "leaver")
		stay := submitAll(t.Context(), d, "k", 0, "stayer")
		synctest.Wait()
		cancel()
		if r := <-gone; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("leaver: %v", r.err)
		}
		text(t, <-stay)
		synctest.Wait()
		if s := d.Stats(); s.DroppedResults != 1 {
			t.Fatalf("dropped %d, want 1", s.DroppedResults)
		}
	})
}

func TestBatchThatNeverEndsFailsAtBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.never = true
		d := open(t, f, Policy{BatchMinSize: 1, NoRescue: true})
		start := time.Now()
		_, err := d.Submit(t.Context(), 10*time.Minute, req("k", "x"))
		if !errors.Is(err, llmfleet.ErrBudgetExceeded) {
			t.Fatalf("err %v", err)
		}
		if el := time.Since(start); el != 10*time.Minute {
			t.Fatalf("failed after %s", el)
		}
		if s := d.Stats(); s.BudgetMisses != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestCloseFlushesAndDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := &Dispatcher{Providers: []llmfleet.Provider{f}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		ch := submitAll(t.Context(), d, "k", 0, prompts("p", 3)...)
		synctest.Wait()
		start := time.Now()
		if err := d.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < 60*time.Second {
			t.Fatalf("Close returned before the batch ended")
		}
		for range 3 {
			text(t, <-ch)
		}
		if _, err := d.Submit(t.Context(), 0, req("k", "late")); !errors.Is(err, llmfleet.ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	})
}

func TestCloseGivesUpAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.never = true
		d := &Dispatcher{Providers: []llmfleet.Provider{f}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		ch := submitAll(t.Context(), d, "k", 0, "p")
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v", err)
		}
		if r := <-ch; !errors.Is(r.err, llmfleet.ErrClosed) {
			t.Fatalf("waiter: %v", r.err)
		}
	})
}
