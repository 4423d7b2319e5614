// Package storetest checks that an llmfleet.Store behaves as the contract
// of that interface says, in the manner of testing/slogtest:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, storetest.Harness{New: newStore, Reopen: reopen, Second: second})
//	}
//
// Run exercises every method: requests stored byte for byte, the batch
// lifecycle (intent, created, ended, complete, resolve), failed creates
// with and without requeue, what Pending returns after each crash point,
// typed results and the ledger entries completed with them, sealed
// credentials, the ledger, turnaround samples, prompt-cache statistics
// and prefixes, the owners of pass-through objects (if it keeps them),
// retention (Purge), ErrNotFound for unknown ids, concurrent AddRequest
// and CompleteRequests calls, given a Reopen
// hook that everything survives closing and reopening the store, and
// given a Second hook that a store holding its data exclusively refuses
// a second one.
//
// Beyond the interface's doc comments, the suite pins down these rules:
//   - AddRequest refuses an id stored already, and a request for which it
//     returns an error (a canceled context among others) is not stored. A
//     request added submitted without a batch (sent sync) stays so: no
//     batch takes it, Pending lists it among the queued ones (State
//     submitted) until it is completed. One added in any other state is
//     stored queued.
//   - CompleteRequests reports, per completion, whether it completed its
//     request: false for one done already, or completed earlier in the
//     call; of callers racing to complete one request, one is told true.
//   - RecordIntent sets Size to the number of requests; it fails, recording
//     nothing, when a request is unknown (ErrNotFound) or not queued. It
//     keeps CreateDeadline, which Pending returns (zero if none was set).
//   - A batch stays in state created after RecordEnded; Pending lists it,
//     with EndedAt, until ResolveBatch.
//   - Pending lists queued requests oldest AcceptedAt first, batches oldest
//     IntentAt first, and with each batch only its requests still
//     submitted.
//   - CompleteRequests may complete a queued request. A request that is
//     done keeps its first result and gets no second ledger entry: neither
//     a later call, nor a later completion of it in the same call, nor one
//     of concurrent calls racing for it writes one. The entry written is
//     the one given with the result kept. A call naming an unknown request
//     stores no result and no ledger entry.
//   - A result comes back typed as it was stored: Err nil and Body on
//     success; on error Err field for field, with Err.Body byte for byte
//     even when it is not JSON, and no Body.
//   - RecordCreateFailed with requeue clears BatchID and CustomID; of a
//     batch recorded created it fails with ErrStale, changing nothing.
//   - Turnarounds returns the samples by Provider, then Model (compared as
//     two strings, not joined), each pair's oldest first. The latest n are
//     those with the latest At; of samples with the same At, the ones
//     added later, in one call or in later calls. n <= 0 returns none.
//   - CacheStats returns one statistic per provider, model, credential,
//     lookup and entry (compared as five strings, not joined), in any
//     order, its counts the sums of all those added, in one call or in
//     several, concurrent ones included.
//   - PutPrefixes folds what it is given into what is kept of a prefix
//     (per credential and hash), several states of one prefix in a call
//     taken in order: a Tokens above 0 replaces the kept one, even a
//     larger one, and 0 keeps it; each time keeps the later of the kept
//     and the given, a zero time (not known) never replacing a known one.
//     Concurrent calls over the same prefixes, in any order, all
//     succeed. Prefixes returns each prefix asked for once, in any
//     order, and leaves out the hashes it does not hold and the prefixes
//     of other credentials.
//   - Purge counts deleted requests, batches, ledger entries, turnaround
//     samples and prefixes; it keeps queued and submitted requests and
//     pending batches whatever their age. Turnaround samples are cut with
//     the ledger (At before ledgerBefore), not with the results; prefixes
//     with the results (SeenAt before resultsBefore: one put without
//     SeenAt goes at the first Purge).
//   - Stores return copies: changing what a method returned, or what was
//     passed to it, changes nothing stored.
//   - Given Harness.Second, a second store opened on the data of an open
//     one fails with an error wrapping llmfleet.ErrLocked, and the first
//     goes on working; after a Reopen the reopened store holds the data.
//
// Times must round-trip to the nanosecond (compared with time.Time.Equal),
// bodies byte for byte. A request's Client and a ledger entry's Client
// round-trip as given, across a Reopen too. A nil Header may come back nil or empty.
// A SpendStore sums the ledger by client and UTC day; Purge cuts it too.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Harness tells Run how to get stores.
type Harness struct {
	// New returns a fresh, empty store. It is called once per subtest;
	// closing the store goes through t.Cleanup, so it must not fail if
	// Reopen closed the store already. Required.
	New func(t *testing.T) llmfleet.Store

	// Reopen closes old and returns a store reading the same data, as a
	// restart of the process would; the new store is closed through
	// t.Cleanup. Nil skips the durability checks.
	Reopen func(t *testing.T, old llmfleet.Store) llmfleet.Store

	// Second tries to open a second store on the data of open, which is
	// open, as a second process would, and returns the error it got: one
	// wrapping llmfleet.ErrLocked for a store that holds its data
	// exclusively. A second store that did open must be closed by Second.
	// Nil skips the check, for stores whose data no other process can
	// reach.
	Second func(t *testing.T, open llmfleet.Store) error
}

// Run runs the contract suite against the stores of h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	s := &suite{h: h}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"AddGetRequest", s.addGet},
		{"AddRequestMinimal", s.addMinimal},
		{"AddRequestDuplicate", s.addDuplicate},
		{"AddRequestCanceled", s.addCanceled},
		{"AddRequestSentSync", s.addSentSync},
		{"Copies", s.copies},
		{"NotFound", s.notFound},
		{"Lifecycle", s.lifecycle},
		{"RecordIntentNotQueued", s.intentNotQueued},
		{"CreateFailedRequeue", s.createFailedRequeue},
		{"CreateFailedNoRequeue", s.createFailedNoRequeue},
		{"CreateFailedStale", s.createFailedStale},
		{"CompleteQueuedAndTwice", s.completeQueuedAndTwice},
		{"CompleteWithLedger", s.completeWithLedger},
		{"CompleteOnce", s.completeOnce},
		{"CompleteUnknown", s.completeUnknown},
		{"CompleteConcurrentOnce", s.completeConcurrentOnce},
		{"CompleteConcurrentOverlap", s.completeConcurrentOverlap},
		{"TypedResults", s.typedResultsRoundTrip},
		{"CreateDeadline", s.createDeadline},
		{"PendingOrder", s.pendingOrder},
		{"PendingAnswered", s.pendingAnswered},
		{"Credentials", s.credentials},
		{"Ledger", s.ledger},
		{"Purge", s.purge},
		{"TurnaroundsRoundTrip", s.turnaroundsRoundTrip},
		{"TurnaroundsLatest", s.turnaroundsLatest},
		{"TurnaroundsReopen", s.turnaroundsReopen},
		{"TurnaroundsPurge", s.turnaroundsPurge},
		{"CacheRoundTrip", s.cacheRoundTrip},
		{"CacheStatsAddUp", s.cacheStatsAddUp},
		{"CacheStatsConcurrent", s.cacheStatsConcurrent},
		{"PrefixesMerge", s.prefixesMerge},
		{"PrefixesMany", s.prefixesMany},
		{"PrefixesConcurrent", s.prefixesConcurrent},
		{"PrefixesPurge", s.prefixesPurge},
		{"CacheCopies", s.cacheCopies},
		{"ConcurrentAdd", s.concurrentAdd},
		{"ConcurrentLifecycle", s.concurrentLifecycle},
		{"Restart", s.restart},
		{"ClientAttribution", s.clientAttribution},
		{"ClientSpend", s.clientSpend},
		{"BatchOwners", s.batchOwnersRecord},
		{"Reopen", s.reopen},
		{"Locked", s.locked},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

type suite struct{ h Harness }

// base is the suite's reference time: nanoseconds and a zone other than
// UTC, so that a store that drops either is caught.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+1", 3600))

func ctx(t *testing.T) context.Context { return t.Context() }

func (s *suite) store(t *testing.T) llmfleet.Store {
	t.Helper()
	st := s.h.New(t)
	if st == nil {
		t.Fatal("Harness.New returned nil")
	}
	return st
}

// body returns a create-message body of about 1.5 KB whose bytes a store
// must keep as they are: odd spacing, escapes, non-ASCII text, key order
// and number formats that a JSON round trip would change.
func body(i int) json.RawMessage {
	pad := bytes.Repeat([]byte("lorem ipsum "), 100)
	return json.RawMessage(fmt.Sprintf("{\"model\":\"claude-sonnet-4-6\", \"max_tokens\" : 1024,\n\t\"temperature\":1.0,"+
		"\"top_p\":1e0,\"zz_unknown\":{\"b\":1,\"a\":2},\"messages\":[{\"role\":\"user\",\"content\":"+
		"\"question %d: caf\u00e9 \\u00e9 \\\"quoted\\\" \\ud83d\\ude00 %s\"}]}  \n", i, pad))
}

func header() http.Header {
	return http.Header{
		"Anthropic-Version": {"2023-06-01"},
		"Anthropic-Beta":    {"message-batches-2024-09-24", "prompt-caching-2024-07-31"},
	}
}

// request returns a queued request numbered i, accepted at base+i ms.
func request(i int) *llmfleet.StoredRequest {
	at := base.Add(time.Duration(i) * time.Millisecond)
	return &llmfleet.StoredRequest{
		ID:           fmt.Sprintf("lfr_%04d", i),
		Provider:     "anthropic",
		CredentialID: "cred_0123456789abcdef01234567",
		Header:       header(),
		Body:         body(i),
		Model:        "claude-sonnet-4-6",
		Client:       fmt.Sprintf("client-%d", i%2),
		Budget:       90 * time.Minute,
		AcceptedAt:   at,
		Deadline:     at.Add(90 * time.Minute),
		State:        llmfleet.RequestQueued,
		Endpoint:     []string{"", "/v1/chat/completions", "/v1/embeddings"}[i%3],
	}
}

func (s *suite) add(t *testing.T, st llmfleet.Store, rs ...*llmfleet.StoredRequest) {
	t.Helper()
	for _, r := range rs {
		if err := st.AddRequest(ctx(t), r); err != nil {
			t.Fatalf("AddRequest(%s): %v", r.ID, err)
		}
	}
}

func (s *suite) get(t *testing.T, st llmfleet.Store, id string) *llmfleet.StoredRequest {
	t.Helper()
	r, err := st.GetRequest(ctx(t), id)
	if err != nil {
		t.Fatalf("GetRequest(%s): %v", id, err)
	}
	if r == nil {
		t.Fatalf("GetRequest(%s) returned nil", id)
	}
	return r
}

// batch returns a batch numbered i, its intent recorded at base+1h+i s,
// its create call due 10 minutes and i ns later.
func batch(i int) *llmfleet.StoredBatch {
	at := base.Add(time.Hour + time.Duration(i)*time.Second)
	return &llmfleet.StoredBatch{
		ID:             fmt.Sprintf("lfb_%04d", i),
		Provider:       "anthropic",
		CredentialID:   "cred_0123456789abcdef01234567",
		State:          llmfleet.BatchIntent,
		IntentAt:       at,
		CreateDeadline: at.Add(10*time.Minute + time.Duration(i)),
	}
}

// customIDs maps each request's id to a custom_id.
func customIDs(rs ...*llmfleet.StoredRequest) map[string]string {
	m := make(map[string]string, len(rs))
	for i, r := range rs {
		m[r.ID] = fmt.Sprintf("r%d", i)
	}
	return m
}

// result returns a successful answer to request i.
func result(i int) *llmfleet.StoredResult {
	res := &llmfleet.StoredResult{
		StatusCode: 200,
		Body: json.RawMessage(fmt.Sprintf(`{"id":"msg_%04d","type":"message","role":"assistant","model":"claude-sonnet-4-6",`+
			`"content":[{"type":"text","text":"answer %d \u00e9"}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":%d,"output_tokens":7}}`+"\n", i, i, 100+i)),
		CompletedAt: base.Add(2*time.Hour + time.Duration(i)*time.Millisecond),
	}
	res.Usage.InputTokens = int64(100 + i)
	res.Usage.OutputTokens = 7
	res.Usage.CacheCreationInputTokens = 11
	res.Usage.CacheReadInputTokens = 13
	res.Usage.CacheCreation.Ephemeral5mInputTokens = 5
	res.Usage.CacheCreation.Ephemeral1hInputTokens = 6
	return res
}

// errorResult returns a provider's error answer: no Body, a typed Err.
func errorResult() *llmfleet.StoredResult {
	return &llmfleet.StoredResult{
		StatusCode: 529,
		Err: &llmfleet.ResultError{
			Kind:       llmfleet.KindProvider,
			StatusCode: 529,
			Type:       "overloaded_error",
			Message:    "Overloaded <again> & \"again\"",
			RequestID:  "req_011CXYZ",
			Body: json.RawMessage(`{"type":"error", "error":{"type":"overloaded_error","message":"Overloaded"},` +
				"\n\t\"request_id\":\"req_011CXYZ\"}  "),
			BatchID: "msgbatch_01err",
		},
		CompletedAt: base.Add(3 * time.Hour),
		BatchID:     "msgbatch_01err",
	}
}

// done returns the completions of the requests of m, without ledger
// entries, in the order of their ids.
func done(m map[string]*llmfleet.StoredResult) []llmfleet.Completion {
	out := make([]llmfleet.Completion, 0, len(m))
	for id, res := range m {
		out = append(out, llmfleet.Completion{RequestID: id, Result: res})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RequestID < out[j].RequestID })
	return out
}

func (s *suite) pending(t *testing.T, st llmfleet.Store) ([]*llmfleet.StoredRequest, []*llmfleet.PendingBatch) {
	t.Helper()
	q, b, err := st.Pending(ctx(t))
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	return q, b
}

// checkRequest compares a stored request with the one that was added and
// the state, batch and result it should have now.
func checkRequest(t *testing.T, got, want *llmfleet.StoredRequest) {
	t.Helper()
	if got.ID != want.ID {
		t.Fatalf("request id %q, want %q", got.ID, want.ID)
	}
	id := want.ID
	if got.Provider != want.Provider || got.CredentialID != want.CredentialID || got.Model != want.Model {
		t.Errorf("%s: provider/credential/model %q %q %q, want %q %q %q", id,
			got.Provider, got.CredentialID, got.Model, want.Provider, want.CredentialID, want.Model)
	}
	if len(want.Header) == 0 {
		if len(got.Header) != 0 {
			t.Errorf("%s: Header %v, want none", id, got.Header)
		}
	} else if !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("%s: Header %v, want %v", id, got.Header, want.Header)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("%s: Body changed:\n got %q\nwant %q", id, got.Body, want.Body)
	}
	if got.Client != want.Client {
		t.Errorf("%s: Client %q, want %q", id, got.Client, want.Client)
	}
	if got.Endpoint != want.Endpoint {
		t.Errorf("%s: Endpoint %q, want %q", id, got.Endpoint, want.Endpoint)
	}
	if got.Budget != want.Budget {
		t.Errorf("%s: Budget %v, want %v", id, got.Budget, want.Budget)
	}
	if !got.AcceptedAt.Equal(want.AcceptedAt) || !got.Deadline.Equal(want.Deadline) {
		t.Errorf("%s: AcceptedAt %v Deadline %v, want %v %v", id, got.AcceptedAt, got.Deadline, want.AcceptedAt, want.Deadline)
	}
	if got.State != want.State {
		t.Errorf("%s: State %q, want %q", id, got.State, want.State)
	}
	if got.BatchID != want.BatchID || got.CustomID != want.CustomID {
		t.Errorf("%s: BatchID %q CustomID %q, want %q %q", id, got.BatchID, got.CustomID, want.BatchID, want.CustomID)
	}
	checkResult(t, id, got.Result, want.Result)
}

// with returns a copy of r in a state, batch and custom id, with a result.
func with(r *llmfleet.StoredRequest, state llmfleet.RequestState, batchID, customID string, res *llmfleet.StoredResult) *llmfleet.StoredRequest {
	c := *r
	c.State, c.BatchID, c.CustomID, c.Result = state, batchID, customID, res
	return &c
}

func ids(rs []*llmfleet.StoredRequest) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func isNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, llmfleet.ErrNotFound) {
		t.Errorf("%s: error %v, want llmfleet.ErrNotFound", what, err)
	}
}
