package dispatch

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/llmfleet/llmfleet"
)

// hangingProvider is a fakeProvider whose first status call never answers
// until its context ends, like a connection the provider never replies on.
type hangingProvider struct {
	*fakeProvider
	mu   sync.Mutex
	hung bool
}

func (h *hangingProvider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	h.mu.Lock()
	first := !h.hung
	h.hung = true
	h.mu.Unlock()
	if first {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.fakeProvider.GetBatch(ctx, cred, id)
}

func TestPollThatNeverAnswersIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hangingProvider{fakeProvider: newFake()}
		d := &Dispatcher{Providers: []llmfleet.Provider{h}, Policy: Policy{BatchMinSize: 1}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(context.Background())
		// No budget: nothing but the poll itself can end the wait.
		resp, err := d.SubmitBatch(t.Context(), 0, req("k", "patient"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Route != llmfleet.RouteBatch || string(resp.Body) != string(message(req("k", "patient").Body)) {
			t.Fatalf("got %s %s", resp.Route, resp.Body)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.hung {
			t.Fatal("the first poll did not hang")
		}
	})
}
