package dispatch

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// hintProvider is a fakeProvider whose retrieves of a running batch ask
// for a wait (Batch.PollAfter), by batch id, and that logs its status
// calls.
type hintProvider struct {
	*fakeProvider
	mu    sync.Mutex
	hints map[string]time.Duration // by batch id
	// unlisted are batch ids the listings leave out (as if past the
	// pages read): only a retrieve sees them.
	unlisted map[string]bool
	calls    []statusCall
}

// statusCall is one status call: a retrieve of id, or a listing (id "").
type statusCall struct {
	at time.Time
	id string
}

func (h *hintProvider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	h.mu.Lock()
	h.calls = append(h.calls, statusCall{time.Now(), id})
	hint := h.hints[id]
	h.mu.Unlock()
	b, err := h.fakeProvider.GetBatch(ctx, cred, id)
	if err == nil && b.Status != llmfleet.BatchEnded {
		b.PollAfter = hint
	}
	return b, err
}

func (h *hintProvider) ListBatches(ctx context.Context, cred llmfleet.Credential, after string, limit int) (*llmfleet.BatchPage, error) {
	h.mu.Lock()
	h.calls = append(h.calls, statusCall{time.Now(), ""})
	h.mu.Unlock()
	p, err := h.fakeProvider.ListBatches(ctx, cred, after, limit)
	if err == nil {
		p.Batches = slices.DeleteFunc(p.Batches, func(b llmfleet.Batch) bool { return h.unlisted[b.ID] })
	}
	return p, err
}

// log returns the status calls made since start, as offsets from it.
func (h *hintProvider) log(start time.Time) (gets map[string][]time.Duration, all []time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	gets = map[string][]time.Duration{}
	for _, c := range h.calls {
		all = append(all, c.at.Sub(start))
		if c.id != "" {
			gets[c.id] = append(gets[c.id], c.at.Sub(start))
		}
	}
	return gets, all
}

func openHint(t *testing.T, h *hintProvider, pol Policy) *Dispatcher {
	t.Helper()
	d := &Dispatcher{Providers: []llmfleet.Provider{h}, Policy: pol}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

// modelReq is a request of key for model.
func modelReq(key, model, prompt string) *llmfleet.Request {
	return &llmfleet.Request{Credential: llmfleet.Credential{APIKey: key}, Body: body(model, prompt)}
}

// spacedAtLeast reports the first gap between two successive times of ts
// shorter than min, if any.
func spacedAtLeast(ts []time.Duration, min time.Duration) (time.Duration, bool) {
	for i := 1; i < len(ts); i++ {
		if gap := ts[i] - ts[i-1]; gap < min {
			return gap, false
		}
	}
	return 0, true
}

// A lone batch whose retrieves ask for 10s is retrieved every 10s, not
// at the 5s poll interval, and its result still comes at the first
// retrieve after it ended.
func TestPollHintLoneBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 43 * time.Second }
		h := &hintProvider{fakeProvider: f, hints: map[string]time.Duration{"msgbatch_1": 10 * time.Second}}
		d := openHint(t, h, Policy{BatchMinSize: 1, PollInterval: 5 * time.Second})
		start := time.Now()
		if _, err := d.SubmitBatch(t.Context(), 0, modelReq("k", "m1", "x")); err != nil {
			t.Fatal(err)
		}
		late := time.Since(start) - 43*time.Second
		gets, all := h.log(start)
		t.Logf("retrieves at %v; result %s after the end", gets["msgbatch_1"], late)
		if gap, ok := spacedAtLeast(gets["msgbatch_1"], 10*time.Second); !ok {
			t.Errorf("retrieved %s after the previous retrieve, which asked for 10s", gap)
		}
		if len(all) != len(gets["msgbatch_1"]) || len(all) > 5 {
			t.Errorf("%d status calls (%d retrieves), want at most 5 retrieves in 43s", len(all), len(gets["msgbatch_1"]))
		}
		if late < 0 || late > 10*time.Second {
			t.Errorf("result %s after the end, want within the one wait asked for", late)
		}
	})
}

// A batch whose retrieve asked for 10s is not called for sooner, while
// another batch of the same credential, which asks nothing, is looked at
// every 5s. When the listing made for the other shows the first batch,
// its end is answered within one poll interval, before the wait it asked
// for is over; when it does not (the first batch is retrieved on its
// own), within the wait.
func TestPollHintPerBatch(t *testing.T) {
	const poll = 5 * time.Second
	for _, c := range []struct {
		name   string
		listed bool
		late   time.Duration // the longest after its end the first batch may be answered
	}{
		{"listing shows it", true, poll},
		{"listing does not show it", false, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.turnaround = func(model string) time.Duration {
					if model == "slow" {
						return 61 * time.Second
					}
					return 27 * time.Second
				}
				h := &hintProvider{fakeProvider: f, hints: map[string]time.Duration{"msgbatch_1": 10 * time.Second},
					unlisted: map[string]bool{"msgbatch_1": !c.listed}}
				d := openHint(t, h, Policy{BatchMinSize: 1, PollInterval: poll})
				start := time.Now()
				hinted := make(chan time.Duration, 1)
				go func() {
					if _, err := d.SubmitBatch(t.Context(), 0, modelReq("k", "fast", "a")); err != nil {
						t.Error(err)
					}
					hinted <- time.Since(start)
				}()
				// The first batch is alone for a while: retrieved, it asks
				// for 10s. Then the second one comes.
				time.Sleep(12 * time.Second)
				if _, err := d.SubmitBatch(t.Context(), 0, modelReq("k", "slow", "b")); err != nil {
					t.Fatal(err)
				}
				checkPerBatch(t, h, start, <-hinted, c.late)
			})
		})
	}
}

// checkPerBatch checks TestPollHintPerBatch's calls: the first batch
// (ended at 27s, answered at answered) retrieved at least 10s apart, a
// poll every 5s, three of them while both ran (12s to 27s).
func checkPerBatch(t *testing.T, h *hintProvider, start time.Time, answered, lateMax time.Duration) {
	t.Helper()
	gets, all := h.log(start)
	polls := slices.Compact(all) // a listing and the retrieves it left make one poll
	t.Logf("polls at %v; retrieves %v; first batch answered at %s (ended at 27s)", polls, gets, answered)
	if gap, ok := spacedAtLeast(gets["msgbatch_1"], 10*time.Second); !ok || len(gets["msgbatch_1"]) == 0 {
		t.Errorf("first batch retrieved %s after the previous retrieve, which asked for 10s (retrieves %v)", gap, gets["msgbatch_1"])
	}
	if gap, ok := spacedAtLeast(polls, 5*time.Second); !ok {
		t.Errorf("two polls %s apart", gap)
	}
	var during int
	for _, at := range polls {
		if at > 12*time.Second && at <= 27*time.Second {
			during++
		}
	}
	if during < 3 {
		t.Errorf("%d polls while both ran, want one every 5s: the second batch was held back", during)
	}
	if late := answered - 27*time.Second; late < 0 || late > lateMax {
		t.Errorf("first batch answered %s after its end, want within %s", late, lateMax)
	}
}

// PollNow makes a batch whose retrieve asked for a long wait looked at
// at once; an unknown batch is not.
func TestPollNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 20 * time.Second }
		h := &hintProvider{fakeProvider: f, hints: map[string]time.Duration{"msgbatch_1": 5 * time.Minute}}
		d := openHint(t, h, Policy{BatchMinSize: 1, PollInterval: 5 * time.Second})
		start := time.Now()
		done := make(chan time.Duration, 1)
		go func() {
			if _, err := d.SubmitBatch(t.Context(), 0, modelReq("k", "m1", "x")); err != nil {
				t.Error(err)
			}
			done <- time.Since(start)
		}()
		time.Sleep(21 * time.Second) // ended at 20s; retrieved at 5s, which asked for 5m
		if d.PollNow("fake", "msgbatch_404") || d.PollNow("other", "msgbatch_1") {
			t.Error("PollNow found a batch it does not track")
		}
		if !d.PollNow("fake", "msgbatch_1") {
			t.Fatal("PollNow did not find the batch")
		}
		at := <-done
		if at != 21*time.Second {
			t.Errorf("answered at %s, want at once (21s) after PollNow", at)
		}
		gets, _ := h.log(start)
		t.Logf("retrieves at %v", gets["msgbatch_1"])
	})
}

// A wait asked for beyond MaxPollInterval is cut to it.
func TestPollHintCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 70 * time.Second }
		h := &hintProvider{fakeProvider: f, hints: map[string]time.Duration{"msgbatch_1": time.Hour}}
		d := openHint(t, h, Policy{BatchMinSize: 1, PollInterval: 5 * time.Second, MaxPollInterval: 20 * time.Second})
		start := time.Now()
		if _, err := d.SubmitBatch(t.Context(), 0, modelReq("k", "m1", "x")); err != nil {
			t.Fatal(err)
		}
		gets, _ := h.log(start)
		if want := []time.Duration{5 * time.Second, 25 * time.Second, 45 * time.Second, 65 * time.Second, 85 * time.Second}; !slices.Equal(gets["msgbatch_1"], want) {
			t.Errorf("retrieves at %v, want %v (every MaxPollInterval)", gets["msgbatch_1"], want)
		}
	})
}
