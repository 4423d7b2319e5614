package dispatch

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/llmfleet/llmfleet"
)

// Calls giving the id of a request already accepted attach to it: three
// concurrent ones, a retry once it is answered and a retry after a crash
// all get the one answer, and the request goes upstream once.
func TestSameIDAttaches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-idem"}
		mk := func(id, prompt string) *llmfleet.Request {
			return &llmfleet.Request{Credential: cred, Body: body("m1", prompt), ID: id}
		}
		d, db := durable(t, f, path, v)
		var wg sync.WaitGroup
		answers := make([]string, 3)
		for i := range answers {
			wg.Go(func() {
				resp, err := d.SubmitBatch(t.Context(), 0, mk("lfr_idem1", "once"))
				if err != nil {
					t.Error(err)
					return
				}
				answers[i] = string(resp.Body)
			})
		}
		wg.Wait()
		for _, a := range answers {
			if !strings.Contains(a, `"re: once"`) || a != answers[0] {
				t.Fatalf("answers %q", answers)
			}
		}
		// Answered: a retry gets the stored answer at once.
		resp, err := d.SubmitBatch(t.Context(), 0, mk("lfr_idem1", "once"))
		if err != nil || string(resp.Body) != answers[0] || resp.RequestID != "lfr_idem1" {
			t.Fatalf("retry: %v %+v", err, resp)
		}
		// Same id, another body or another key: refused.
		if _, err := d.SubmitBatch(t.Context(), 0, mk("lfr_idem1", "twice")); !errors.Is(err, llmfleet.ErrIDConflict) {
			t.Fatalf("other body: %v", err)
		}
		other := mk("lfr_idem1", "once")
		other.Credential = llmfleet.Credential{APIKey: "sk-other"}
		if _, err := d.SubmitBatch(t.Context(), 0, other); !errors.Is(err, llmfleet.ErrIDConflict) {
			t.Fatalf("other key: %v", err)
		}
		if id, err := d.Enqueue(t.Context(), 0, mk("lfr_idem1", "once")); err != nil || id != "lfr_idem1" {
			t.Fatalf("enqueue again: %q %v", id, err)
		}

		// Accepted, then the process dies before the answer: the retry
		// after the restart waits for the recovered request.
		if _, err := d.Enqueue(t.Context(), 0, mk("lfr_idem2", "after crash")); err != nil {
			t.Fatal(err)
		}
		crash(d, db)
		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		resp, err = d2.SubmitBatch(t.Context(), 0, mk("lfr_idem2", "after crash"))
		if err != nil || !strings.Contains(string(resp.Body), `"re: after crash"`) {
			t.Fatalf("after the restart: %v %+v", err, resp)
		}
		if got := f.batchSizes(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
			t.Fatalf("batches %v, want two of one request each", got)
		}
	})
}
