package dispatch

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// A batched request's client, stored with it, names the ledger entry
// written when it is answered, after a restart too.
func TestClientSurvivesRestartIntoLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-client"}
		d1, db1 := durable(t, f, path, v)
		id, err := d1.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", "hi"), Client: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		crash(d1, db1)

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		if res := await(t, d2, id, cred); res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", id, res.StatusCode, res.Body)
		}
		entries, err := db2.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Client != "alice" || entries[0].RequestID != id {
			t.Fatalf("ledger %+v, want one entry of %s for alice", entries, id)
		}
	})
}

// The sync route's entries name the Request's client.
func TestSubmitSyncEntryNamesClient(t *testing.T) {
	f := newFake()
	var got []llmfleet.LedgerEntry
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: func(e llmfleet.LedgerEntry, _ bool) { got = append(got, e) }}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(t.Context())
	if _, err := d.Submit(t.Context(), 0, &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "k"}, Body: body("m1", "x"), Client: "bob"}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Client != "bob" {
		t.Fatalf("entries %+v, want one for bob", got)
	}
}
