package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// A database filled by an older llmfleet must open and work with a newer
// one. FillCompat writes a fixed set of records; a store's package runs
// it once, with the llmfleet of the day, and keeps the database it
// filled (in its testdata); CheckCompat then checks, with every later
// llmfleet, that the database opens, reads its records as they were
// written, and goes on. The records are frozen here, apart from the
// suite's: a change to them would no longer match the kept databases.

// compatBase is the time the compat records are dated from.
var compatBase = time.Date(2026, 2, 3, 4, 5, 6, 789012345, time.UTC)

// compatRequest returns compat request i (1 to 8), queued.
func compatRequest(i int) *llmfleet.StoredRequest {
	at := compatBase.Add(time.Duration(i) * time.Second)
	return &llmfleet.StoredRequest{
		ID: fmt.Sprintf("lfr_compat_%d", i), Provider: []string{"anthropic", "openai"}[i%2],
		CredentialID: "cred_compat", Header: http.Header{"Anthropic-Version": {"2023-06-01"}, "X-Compat": {"a", "b"}},
		Endpoint: []string{"", "/v1/chat/completions"}[i%2],
		Body:     json.RawMessage(fmt.Sprintf("{\"n\": %d, \"text\":\"caf\u00e9 \\u00e9\"}\n", i)),
		Model:    "claude-sonnet-4-6", Pool: "pool_compat", Client: fmt.Sprintf("client-%d", i%2),
		Budget: time.Duration(i) * time.Hour, AcceptedAt: at, Deadline: at.Add(time.Duration(i) * time.Hour),
		State: llmfleet.RequestQueued,
	}
}

// compatBatch returns compat batch i (1 to 3), in state intent.
func compatBatch(i int) *llmfleet.StoredBatch {
	at := compatBase.Add(time.Minute + time.Duration(i)*time.Second)
	return &llmfleet.StoredBatch{ID: fmt.Sprintf("lfb_compat_%d", i), Provider: "anthropic", CredentialID: "cred_compat",
		State: llmfleet.BatchIntent, IntentAt: at, CreateDeadline: at.Add(10 * time.Minute)}
}

// compatResults are the results of requests 5 and 6: a success and an
// error whose envelope is not JSON.
func compatResults() [2]*llmfleet.StoredResult {
	ok := &llmfleet.StoredResult{StatusCode: 200, Body: json.RawMessage(`{"id":"msg_compat", "content":[]}` + "\n"),
		Usage: llmfleet.Usage{InputTokens: 120, OutputTokens: 7, CacheReadInputTokens: 13}, BatchID: "msgbatch_compat_2",
		CompletedAt: compatBase.Add(time.Hour)}
	ok.Usage.CacheCreation.Ephemeral1hInputTokens = 6
	fail := &llmfleet.StoredResult{StatusCode: 502, CompletedAt: compatBase.Add(time.Hour + 1), Err: &llmfleet.ResultError{
		Kind: llmfleet.KindProvider, StatusCode: 502, Type: "api_error", Message: "Bad Gateway",
		Body: json.RawMessage("<html>502</html>\n"), BatchID: "msgbatch_compat_2"}}
	return [2]*llmfleet.StoredResult{ok, fail}
}

// compatEntry returns compat ledger entry i (1 to 4).
func compatEntry(i int) llmfleet.LedgerEntry {
	e := llmfleet.LedgerEntry{RequestID: fmt.Sprintf("lfr_compat_%d", i+4), Time: compatBase.Add(time.Duration(i) * time.Minute),
		BatchID: "msgbatch_compat_2", Provider: "anthropic", Model: "claude-sonnet-4-6", Route: llmfleet.RouteBatch,
		Outcome: "ok", Usage: llmfleet.Usage{InputTokens: int64(100 + i), OutputTokens: 7}, CostUSD: 0.001 * float64(i),
		OtherRouteUSD: 0.002 * float64(i), Priced: true, Queued: time.Second, Turnaround: time.Minute, Latency: 2 * time.Minute,
		Budget: time.Hour, BudgetMet: i%2 == 0, Client: "client-1"}
	switch i {
	case 3:
		e.RequestID, e.BatchID, e.Route, e.Rescue, e.Tier = "", "", llmfleet.RouteFlex, llmfleet.RescueSync, llmfleet.TierStandard
	case 4:
		e.MissUSD, e.Rewrite, e.Estimated = 0.0004, llmfleet.RewriteTTL1h, true
	}
	return e
}

// compatTurnarounds, compatStats and compatPrefixes are the compat
// samples, cache statistics and prefixes.
func compatTurnarounds() []llmfleet.TurnaroundSample {
	return []llmfleet.TurnaroundSample{
		{Provider: "anthropic", Model: "claude-sonnet-4-6", Size: 10, Turnaround: 3 * time.Minute, At: compatBase.Add(time.Second)},
		{Provider: "anthropic", Model: "claude-sonnet-4-6", Size: 20, Turnaround: 4 * time.Minute, At: compatBase.Add(2 * time.Second)},
		{Provider: "openai", Model: "gpt-5", Size: 5, Turnaround: time.Hour, At: compatBase.Add(time.Second)},
	}
}

func compatStats() []llmfleet.CacheStat {
	return []llmfleet.CacheStat{
		{Provider: "anthropic", Model: "claude-sonnet-4-6", CredentialID: "cred_compat", Lookup: llmfleet.RouteSync,
			Entry: llmfleet.RouteBatch, Lookups: 10, Hits: 4},
		{Provider: "openai", Model: "gpt-5", CredentialID: "cred_compat", Lookup: llmfleet.RouteBatch,
			Entry: llmfleet.RouteBatch, Lookups: 3, Hits: 1},
	}
}

func compatPrefixes() []llmfleet.PrefixState {
	return []llmfleet.PrefixState{
		{CredentialID: "cred_compat", Hash: "sha256:compat1", Tokens: 1024, SyncUntil: compatBase.Add(5 * time.Minute),
			BatchUntil: compatBase.Add(time.Hour), SeenAt: compatBase},
		{CredentialID: "cred_compat", Hash: "sha256:compat2", BatchUntil: compatBase.Add(time.Hour), SeenAt: compatBase.Add(1)},
	}
}

// compatSealed is the compat credential's sealed bytes.
var compatSealed = []byte("sealed\x00\xffcompat")

// batchOwners is the part of a store that records the owners of batches
// made through the pass-through APIs.
type batchOwners interface {
	RecordBatchOwner(ctx context.Context, batchID, owner string) error
	BatchOwner(ctx context.Context, batchID string) (string, error)
}

// FillCompat writes the compat records into s, an empty store: request 1
// queued, 2 sent sync, 3 and 4 in batch 1 (created), 5 and 6 completed
// in batch 2 (resolved) with ledger entries 1 and 2, 7 in batch 3 (an
// intent); ledger entries 3 and 4, the compat credential, turnaround
// samples, cache statistics and prefixes, and a batch owner if s records
// them.
func FillCompat(ctx context.Context, s llmfleet.Store) error {
	for i := 1; i <= 7; i++ {
		r := compatRequest(i)
		if i == 2 {
			r.State = llmfleet.RequestSubmitted
		}
		if err := s.AddRequest(ctx, r); err != nil {
			return err
		}
	}
	res := compatResults()
	e1, e2 := compatEntry(1), compatEntry(2)
	steps := []func() error{
		func() error { return s.PutCredential(ctx, "cred_compat", compatSealed) },
		func() error {
			return s.RecordIntent(ctx, compatBatch(1), map[string]string{"lfr_compat_3": "c3", "lfr_compat_4": "c4"})
		},
		func() error {
			return s.RecordCreated(ctx, "lfb_compat_1", "msgbatch_compat_1", compatBase.Add(2*time.Minute))
		},
		func() error {
			return s.RecordIntent(ctx, compatBatch(2), map[string]string{"lfr_compat_5": "c5", "lfr_compat_6": "c6"})
		},
		func() error {
			return s.RecordCreated(ctx, "lfb_compat_2", "msgbatch_compat_2", compatBase.Add(3*time.Minute))
		},
		func() error {
			_, err := s.CompleteRequests(ctx, []llmfleet.Completion{{RequestID: "lfr_compat_5", Result: res[0], Ledger: &e1},
				{RequestID: "lfr_compat_6", Result: res[1], Ledger: &e2}})
			return err
		},
		func() error { return s.RecordEnded(ctx, "lfb_compat_2", compatBase.Add(2*time.Hour)) },
		func() error { return s.ResolveBatch(ctx, "lfb_compat_2") },
		func() error { return s.RecordIntent(ctx, compatBatch(3), map[string]string{"lfr_compat_7": "c7"}) },
		func() error { return s.AddLedger(ctx, []llmfleet.LedgerEntry{compatEntry(3), compatEntry(4)}) },
		func() error { return s.AddTurnarounds(ctx, compatTurnarounds()) },
		func() error { return s.AddCacheStats(ctx, compatStats()) },
		func() error { return s.PutPrefixes(ctx, compatPrefixes()) },
	}
	if o, ok := s.(batchOwners); ok {
		steps = append(steps, func() error { return o.RecordBatchOwner(ctx, "msgbatch_client", "client-owner") })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// compatStored returns compat request i as FillCompat left it (without
// its Pool, which a store keeps but does not return).
func compatStored(i int) *llmfleet.StoredRequest {
	r := compatRequest(i)
	r.Pool = ""
	res := compatResults()
	switch i {
	case 2:
		r.State = llmfleet.RequestSubmitted
	case 3, 4:
		r.State, r.BatchID, r.CustomID = llmfleet.RequestSubmitted, "lfb_compat_1", fmt.Sprintf("c%d", i)
	case 5, 6:
		r.State, r.BatchID, r.CustomID, r.Result = llmfleet.RequestDone, "lfb_compat_2", fmt.Sprintf("c%d", i), res[i-5]
	case 7:
		r.State, r.BatchID, r.CustomID = llmfleet.RequestSubmitted, "lfb_compat_3", "c7"
	}
	return r
}

// CheckCompat checks s, opened on a database FillCompat filled (and
// closed), by this llmfleet or an older one: that its records read as
// written (CheckCompatRecords), and that s goes on working over them
// (CheckCompatWrites).
func CheckCompat(t *testing.T, s llmfleet.Store) {
	t.Helper()
	CheckCompatRecords(t, s)
	CheckCompatWrites(t, s)
}

// CheckCompatRecords checks that s reads the records FillCompat wrote as
// they were written.
func CheckCompatRecords(t *testing.T, s llmfleet.Store) {
	t.Helper()
	c := t.Context()
	for i := 1; i <= 7; i++ {
		r, err := s.GetRequest(c, fmt.Sprintf("lfr_compat_%d", i))
		if err != nil {
			t.Fatalf("compat request %d: %v", i, err)
		}
		checkRequest(t, r, compatStored(i))
	}
	queued, batches, err := s.Pending(c)
	if err != nil || len(queued) != 2 || len(batches) != 2 {
		t.Fatalf("Pending: %v queued, %d batches, %v; want 2 and 2", ids(queued), len(batches), err)
	}
	checkRequest(t, queued[0], compatStored(1))
	checkRequest(t, queued[1], compatStored(2))
	b1, b3 := compatBatch(1), compatBatch(3)
	b1.State, b1.UpstreamID, b1.CreatedAt, b1.Size, b3.Size = llmfleet.BatchCreated, "msgbatch_compat_1", compatBase.Add(2*time.Minute), 2, 1
	checkPendingBatch(t, batches[0], *b1, compatStored(3), compatStored(4))
	checkPendingBatch(t, batches[1], *b3, compatStored(7))
	if sealed, err := s.GetCredential(c, "cred_compat"); err != nil || string(sealed) != string(compatSealed) {
		t.Errorf("compat credential: %q, %v", sealed, err)
	}
	checkCompatTables(t, s)
}

// checkCompatTables checks the compat ledger, turnarounds, cache
// statistics, prefixes and batch owner.
func checkCompatTables(t *testing.T, s llmfleet.Store) {
	t.Helper()
	c := t.Context()
	entries, err := s.Ledger(c, compatBase, compatBase.Add(time.Hour))
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	checkEntries(t, entries, []llmfleet.LedgerEntry{compatEntry(1), compatEntry(2), compatEntry(3), compatEntry(4)})
	checkSpendOfLedger(t, s, compatBase, compatBase.Add(time.Hour), entries)
	samples, err := s.Turnarounds(c, 10)
	if err != nil || len(samples) != 3 {
		t.Fatalf("Turnarounds: %+v, %v", samples, err)
	}
	for i, want := range compatTurnarounds() {
		if got := samples[i]; got.Provider != want.Provider || got.Model != want.Model || got.Size != want.Size ||
			got.Turnaround != want.Turnaround || !got.At.Equal(want.At) {
			t.Errorf("turnaround %d: %+v, want %+v", i, got, want)
		}
	}
	stats, err := s.CacheStats(c)
	if err != nil || len(stats) != 2 || stats[0] != compatStats()[0] || stats[1] != compatStats()[1] {
		t.Errorf("CacheStats: %+v, %v; want %+v", stats, err, compatStats())
	}
	prefixes, err := s.Prefixes(c, "cred_compat", []string{"sha256:compat1", "sha256:compat2", "sha256:none"})
	if err != nil {
		t.Fatalf("Prefixes: %v", err)
	}
	checkPrefixList(t, "compat prefixes", prefixes, compatPrefixes())
	if o, ok := s.(batchOwners); ok {
		if owner, err := o.BatchOwner(c, "msgbatch_client"); err != nil || owner != "client-owner" {
			t.Errorf("BatchOwner: %q, %v", owner, err)
		}
	}
}

// CheckCompatWrites checks that s, holding the records FillCompat wrote,
// goes on: it adds and completes requests, fails and resolves batches,
// adds to the old counts and prefixes, and purges the old records.
func CheckCompatWrites(t *testing.T, s llmfleet.Store) {
	t.Helper()
	c := t.Context()
	if err := s.AddRequest(c, compatRequest(1)); !errors.Is(err, llmfleet.ErrExists) {
		t.Errorf("AddRequest of an old id: %v, want ErrExists", err)
	}
	if err := s.AddRequest(c, compatRequest(8)); err != nil {
		t.Fatal(err)
	}
	res := compatResults()
	kept, err := s.CompleteRequests(c, []llmfleet.Completion{{RequestID: "lfr_compat_3", Result: res[0]},
		{RequestID: "lfr_compat_4", Result: res[1]}, {RequestID: "lfr_compat_5", Result: res[1]}})
	if err != nil || len(kept) != 3 || !kept[0] || !kept[1] || kept[2] {
		t.Fatalf("CompleteRequests over old rows: %v, %v; want [true true false]", kept, err)
	}
	for _, step := range []error{
		s.ResolveBatch(c, "lfb_compat_1"),
		s.RecordCreateFailed(c, "lfb_compat_3", true),
		s.AddCacheStats(c, compatStats()),
		s.PutPrefixes(c, []llmfleet.PrefixState{{CredentialID: "cred_compat", Hash: "sha256:compat2", Tokens: 7}}),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	queued, batches, err := s.Pending(c)
	if err != nil || len(queued) != 4 || len(batches) != 0 {
		t.Fatalf("Pending: %v queued, %d batches, %v; want 4 and 0", ids(queued), len(batches), err)
	}
	requeued := compatStored(7)
	requeued.State, requeued.BatchID, requeued.CustomID = llmfleet.RequestQueued, "", ""
	checkRequest(t, queued[2], requeued)
	if stats, err := s.CacheStats(c); err != nil || len(stats) != 2 || stats[0].Lookups != 20 || stats[1].Hits != 2 {
		t.Errorf("CacheStats added to old counts: %+v, %v", stats, err)
	}
	checkCompatPurge(t, s)
}

// checkCompatPurge purges everything CheckCompatWrites left that Purge
// may delete, and checks the count: 4 done requests, 3 batches, 2
// prefixes, 4 ledger entries, 3 turnaround samples and the batch owner
// if s records them.
func checkCompatPurge(t *testing.T, s llmfleet.Store) {
	t.Helper()
	end := compatBase.Add(100 * 365 * 24 * time.Hour) // after the batch owner, recorded at the time of FillCompat
	n, err := s.Purge(t.Context(), end, end)
	want := 4 + 3 + 2 + 4 + 3
	if _, ok := s.(batchOwners); ok {
		want++
	}
	if err != nil || n != want {
		t.Errorf("Purge: %d, %v; want %d", n, err, want)
	}
	queued, _, err := s.Pending(t.Context())
	if err != nil || len(queued) != 4 {
		t.Errorf("Pending after Purge: %v, %v; want 4 queued", ids(queued), err)
	}
}
