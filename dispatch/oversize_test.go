package dispatch

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
)

// A request no batch can hold is refused before it is stored, and one
// stored anyway (by an older version) does not stop a restart.
func TestOversizedRequestIsNeverStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t) // the fake's batches hold 1 MB
		cred := llmfleet.Credential{APIKey: "sk-big"}
		big := body("m1", strings.Repeat("x", 2<<20))
		d, db := durable(t, f, path, v)
		var pe *llmfleet.Error
		if _, err := d.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: big}); !errors.As(err, &pe) || pe.StatusCode != 413 {
			t.Fatalf("Enqueue: %v", err)
		}
		if _, err := d.SubmitBatch(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: big}); !errors.As(err, &pe) || pe.StatusCode != 413 {
			t.Fatalf("SubmitBatch: %v", err)
		}
		if queued, _, err := db.Pending(t.Context()); err != nil || len(queued) != 0 {
			t.Fatalf("stored %d requests (%v)", len(queued), err)
		}
		id, err := d.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", "small")})
		if err != nil {
			t.Fatal(err)
		}
		crash(d, db)

		db, err = sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if err := db.AddRequest(t.Context(), &llmfleet.StoredRequest{ID: "lfr_big", Provider: "fake", CredentialID: v.Fingerprint(cred),
			Body: big, Model: "m1", AcceptedAt: now, State: llmfleet.RequestQueued}); err != nil {
			t.Fatal(err)
		}
		db.Close()

		d, db = durable(t, f, path, v)
		defer db.Close()
		defer d.Close(t.Context())
		if res := await(t, d, "lfr_big", cred); res.StatusCode != 413 {
			t.Fatalf("oversized stored request answered %d %s", res.StatusCode, res.Body)
		}
		if res := await(t, d, id, cred); res.StatusCode != 200 {
			t.Fatalf("small request answered %d %s", res.StatusCode, res.Body)
		}
	})
}
