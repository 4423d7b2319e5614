package dispatch

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
	"github.com/llmfleet/llmfleet/vault"
)

// replica opens a dispatcher on a fleet's database under name; wrap,
// if not nil, gives the store the dispatcher gets (a fault injected).
func replica(t *testing.T, u, name string, f *fakeProvider, v *vault.Vault, pol Policy, wrap func(*postgres.DB) llmfleet.Store) (*Dispatcher, *postgres.DB) {
	t.Helper()
	db := &postgres.DB{URL: u, Replica: name}
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	var st llmfleet.Store = db
	if wrap != nil {
		st = wrap(db)
	}
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: st, Sealer: v, Policy: pol, Lease: 3 * time.Second}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d.Close(ctx)
		cancel()
		db.Close()
	})
	return d, db
}

// fleetVault returns a vault under the secret every replica of a test
// fleet shares.
func fleetVault(t *testing.T) *vault.Vault {
	t.Helper()
	v, err := vault.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// submitted submits a batched request of id and prompt (key k1; budget 0:
// none) to d without waiting; its answer comes on the channel returned,
// nil after an error, which fails the test.
func submitted(t *testing.T, d *Dispatcher, budget time.Duration, id, prompt string) <-chan *llmfleet.Response {
	t.Helper()
	answered := make(chan *llmfleet.Response, 1)
	r := req("k1", prompt)
	r.ID = id
	if err := d.SubmitBatchFunc(t.Context(), budget, r, func(resp *llmfleet.Response, err error) {
		if err != nil {
			t.Errorf("request %s: %v", id, err)
		}
		answered <- resp
	}); err != nil {
		t.Fatal(err)
	}
	return answered
}

// A request accepted by replica A and batched by replica B is rescued by
// A when its batch runs late: A's sync answer is kept and delivered; B's
// batch answer, which comes second, is recorded in the ledger as paid and
// not delivered (late), as one process records it. Real time: the rescue
// is due at 1.9s, a second before the 3s budget (room for a loaded
// machine under -race), the batch ends at 5s.
func TestFleetRescueElsewhere(t *testing.T) {
	u := pgtest.URL(t)
	v := fleetVault(t)
	f := newFake()
	f.turnaround = func(string) time.Duration { return 5 * time.Second }
	base := Policy{BatchMinSize: 1000, RescueMargin: time.Second, SyncLatencyPrior: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		// A short prior: A's pool is not due for the budget's sake
		// before B's window sends B's.
		TurnaroundPrior: 10 * time.Millisecond}
	polA, polB := base, base
	polA.BatchWindow = time.Hour
	polB.BatchWindow = 50 * time.Millisecond
	a, db := replica(t, u, "a", f, v, polA, nil)
	b, _ := replica(t, u, "b", f, v, polB, nil)

	rescued := submitted(t, a, 3*time.Second, "lfr_rescued", "rescued")
	batched := submitted(t, b, 0, "lfr_batched", "batched")
	if resp := <-rescued; resp == nil || resp.Route != llmfleet.RouteSync {
		t.Fatalf("the rescued request: %+v; want the rescue's sync answer", resp)
	}
	if resp := <-batched; resp == nil {
		t.Fatal("the batched request got no answer")
	}
	if n := f.calls["create"]; n != 1 {
		t.Errorf("%d batches created, want 1 (B's, holding both)", n)
	}
	entries, err := db.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][]llmfleet.Rescue{}
	for _, e := range entries {
		parts[e.RequestID] = append(parts[e.RequestID], e.Rescue)
	}
	if p := parts["lfr_rescued"]; len(p) != 2 || !(p[0] == llmfleet.RescueSync && p[1] == llmfleet.RescueLate) {
		t.Errorf("ledger of the rescued request: %q, want [sync late]", p)
	}
	if p := parts["lfr_batched"]; len(p) != 1 || p[0] != llmfleet.RescueNone {
		t.Errorf("ledger of the batched request: %q, want one plain entry", p)
	}
}

// deafStore is a fleet's store whose announcements of completions never
// arrive (a LISTEN connection that stays lost).
type deafStore struct{ *postgres.DB }

func (deafStore) Watch(ctx context.Context, _ func([]string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// A caller waiting on replica A for a request replica B batched and
// answered is answered although no announcement reaches A: A's look at
// the requests it waits for elsewhere, every third of its lease, finds
// the stored result.
func TestFleetAnnouncementLost(t *testing.T) {
	u := pgtest.URL(t)
	v := fleetVault(t)
	f := newFake()
	f.turnaround = func(string) time.Duration { return 100 * time.Millisecond }
	base := Policy{BatchMinSize: 1000, PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond}
	polA, polB := base, base
	polA.BatchWindow = 500 * time.Millisecond // after B's: its claim finds the request claimed
	polB.BatchWindow = 50 * time.Millisecond
	a, _ := replica(t, u, "a", f, v, polA, func(db *postgres.DB) llmfleet.Store { return deafStore{db} })
	b, _ := replica(t, u, "b", f, v, polB, nil)
	answered := submitted(t, a, 0, "lfr_deaf", "deaf")
	if _, err := b.SubmitBatch(t.Context(), 0, req("k1", "heard")); err != nil {
		t.Fatal(err)
	}
	resp := <-answered
	if resp == nil || !strings.Contains(string(resp.Body), "deaf") {
		t.Fatalf("the caller on A got %+v, want its own answer", resp)
	}
	if n := f.calls["create"]; n != 1 {
		t.Errorf("%d batches created, want 1 (B's)", n)
	}
}

// A replica whose uncertain create another replica found by its tag and
// recorded created meanwhile (a run that lost its lease while
// reconciling) does not send the requests again when its own look finds
// no batch: the requeue is refused (ErrStale), and its caller is answered
// from the result the other stores.
func TestFleetRequeueStale(t *testing.T) {
	u := pgtest.URL(t)
	v := fleetVault(t)
	f := newFake()
	f.lostCreate = 1
	// A looks 3 s after its create: time for the other to find and record
	// it first on a loaded machine.
	a, _ := replica(t, u, "a", f, v, Policy{BatchMinSize: 1, CreateTimeout: 3 * time.Second, SettleDelay: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond}, nil)
	other := &postgres.DB{URL: u, Replica: "other"}
	if err := other.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	answered := submitted(t, a, 0, "lfr_stale", "stale")
	// The other replica finds A's intent by its tag and records it
	// created, before A's look after the create deadline.
	var intent string
	for intent == "" {
		_, pending, err := other.Pending(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, pb := range pending {
			if pb.Batch.State == llmfleet.BatchIntent {
				intent = pb.Batch.ID
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	// As a replica that adopted it (A's lease ended) records it: its own.
	raw, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(t.Context(), `UPDATE batches SET state = 'created', upstream_id = 'msgbatch_found_by_other',
		owner = 'other/adopter' WHERE id = $1`, intent); err != nil {
		t.Fatal(err)
	}
	// A's requeue is refused; once the other stores the answer, A's
	// caller gets it.
	for {
		sr, err := other.GetRequest(t.Context(), "lfr_stale")
		if err != nil {
			t.Fatal(err)
		}
		if sr.State == llmfleet.RequestQueued {
			t.Fatal("the request was queued again though its batch was recorded created")
		}
		f.mu.Lock()
		creates := f.calls["create"]
		f.mu.Unlock()
		if creates > 1 {
			t.Fatal("the request was sent again though its batch was recorded created")
		}
		a.mu.Lock()
		w := a.ids.live["lfr_stale"]
		elsewhere := w != nil && w.state == stateElsewhere
		a.mu.Unlock()
		if elsewhere {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	answeredFromStore(t, other, answered, "lfr_stale", "from the other")
	if n := f.calls["create"]; n != 1 {
		t.Errorf("%d creates, want 1 (the lost one: never sent again)", n)
	}
}

// A replica whose create is under way when another replica adopts the
// batch (the first paused past its lease) does not track the batch once
// its create returns: the store refuses to record it created (ErrStale),
// and the caller is answered from what the adopter stores. Were both to
// track it, both would deliver its results, and a result paid apart from
// a rescue's answer would be ledgered late twice.
func TestFleetCreateAdoptedMeanwhile(t *testing.T) {
	u := pgtest.URL(t)
	f := newFake()
	f.createHeld = make(chan struct{})
	a, _ := replica(t, u, "a", f, fleetVault(t), Policy{BatchMinSize: 1, PollInterval: 50 * time.Millisecond,
		MaxPollInterval: 100 * time.Millisecond}, nil)
	answered := submitted(t, a, 0, "lfr_adopted", "adopted")
	for created := 0; created == 0; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		created = f.calls["create"]
		f.mu.Unlock()
	}
	// Another replica, alive, owns the batch now: it adopted it.
	raw, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(t.Context(), `INSERT INTO replicas (id, name, started_at, lease_until)
		VALUES ('other/adopter', 'other', now(), now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(t.Context(), `UPDATE batches SET owner = 'other/adopter'`); err != nil {
		t.Fatal(err)
	}
	close(f.createHeld)
	for elsewhere := false; !elsewhere; time.Sleep(5 * time.Millisecond) {
		a.mu.Lock()
		w := a.ids.live["lfr_adopted"]
		elsewhere = w != nil && w.state == stateElsewhere
		tracked := a.trackers.countLocked() > 0
		a.mu.Unlock()
		if tracked {
			t.Fatal("the batch another replica adopted is tracked here too")
		}
	}
	other := &postgres.DB{URL: u, Replica: "other"}
	if err := other.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	answeredFromStore(t, other, answered, "lfr_adopted", "from the adopter")
}

// A replica whose record of a created batch is refused while a renewal
// finds its lease ended (the store read its run tokens before the renewal
// started its next run) records it again under the new run, which
// adopted the batch as an intent meanwhile and left it to the create
// under way: the batch is tracked here, once, and its caller answered
// from it. Were the refusal final, no replica would track the batch: its
// owner is this process, alive, and its results, paid, would never be
// delivered.
func TestFleetCreateRefusedWhileOwnRunAdopts(t *testing.T) {
	t.Parallel() // (a database schema of its own; waits on events)
	a, f, _ := renewedReplica(t, false)
	answered := submitted(t, a, 0, "lfr_own_run", "own run")
	trackedHere(t, a, "lfr_own_run", "the batch was left to its owner, this replica's new run, which had left it to the create: no replica tracks it")
	answeredOnce(t, a, f, answered)
}

// The same refusal, when the new run's pickUp of the adopted intent comes
// after the create recorded and tracked the batch: the pickUp knows the
// batch tracked here by its local id (the intent it adopted had no
// provider id yet) and leaves it. Were it to take it again, a waiter with
// no caller would replace the request's own and be reconciled: the
// reconciler, which skips the batches tracked here, would not find the
// batch, and once the create could no longer land would queue the
// request again, to be paid twice.
func TestFleetOwnRunPicksUpAfterTheCreate(t *testing.T) {
	t.Parallel() // (a database schema of its own; waits on events)
	a, f, st := renewedReplica(t, true)
	answered := submitted(t, a, 0, "lfr_picked_late", "picked late")
	for tracked := false; !tracked; time.Sleep(5 * time.Millisecond) {
		a.mu.Lock()
		tracked = a.trackers.countLocked() > 0
		a.mu.Unlock()
	}
	close(st.release) // the pickUp goes on
	answeredOnce(t, a, f, answered)
}

// trackedHere waits until a tracks a batch, and fails with why if the
// request id goes to wait elsewhere first (its batch left to another run).
func trackedHere(t *testing.T, a *Dispatcher, id, why string) {
	t.Helper()
	for tracked := false; !tracked; time.Sleep(5 * time.Millisecond) {
		a.mu.Lock()
		w := a.ids.live[id]
		elsewhere := w != nil && w.state == stateElsewhere
		tracked = a.trackers.countLocked() > 0
		a.mu.Unlock()
		if elsewhere {
			t.Fatal(why)
		}
	}
}

// fleetDB returns the URL of a fresh fleet database and a connection to
// it, for faults a test writes itself.
func fleetDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	u := pgtest.URL(t)
	raw, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return u, raw
}

// renewedReplica opens replica "a" of a fresh fleet over a
// renewedDuringRecord store (holding its pickUp if hold), and a provider
// whose batches end at once.
func renewedReplica(t *testing.T, hold bool) (*Dispatcher, *fakeProvider, *renewedDuringRecord) {
	st := &renewedDuringRecord{}
	a, f := watchedReplica(t, &st.adoptWatch, func(db *postgres.DB) llmfleet.Store { st.DB = db; return st })
	if hold {
		st.release = make(chan struct{})
	}
	return a, f, st
}

// watchedReplica opens replica "a" of a fresh fleet over a store made by
// wrap, which embeds w, and a provider whose batches end at once.
func watchedReplica(t *testing.T, w *adoptWatch, wrap func(*postgres.DB) llmfleet.Store, tweaks ...func(*Policy)) (*Dispatcher, *fakeProvider) {
	u, raw := fleetDB(t)
	w.raw, w.replica, w.adopted = raw, "a", make(chan struct{})
	f := newFake()
	f.turnaround = func(string) time.Duration { return 200 * time.Millisecond }
	pol := Policy{BatchMinSize: 1, PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond}
	for _, tweak := range tweaks {
		tweak(&pol)
	}
	a, _ := replica(t, u, "a", f, fleetVault(t), pol, wrap)
	return a, f
}

// answeredOnce checks that the caller got the batch's answer, that the
// provider saw one create and no sync call, and that nothing is left
// being reconciled.
func answeredOnce(t *testing.T, a *Dispatcher, f *fakeProvider, answered <-chan *llmfleet.Response) {
	t.Helper()
	if resp := <-answered; resp == nil || resp.StatusCode != 200 {
		t.Fatalf("the caller got %+v, want the batch's answer", resp)
	}
	a.mu.Lock()
	reconciling := len(a.creates.creating)
	a.mu.Unlock()
	if reconciling != 0 {
		t.Fatalf("%d batches reconciled after the answer; want none: the batch was picked up a second time", reconciling)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls["create"] != 1 || f.calls["send"] != 0 {
		t.Fatalf("provider calls %v; want one create and no sync call", f.calls)
	}
}

// adoptWatch is a fleet's store that ends the replica's lease on demand
// (endLease) and tells when its next run adopted a batch and finished
// that round of the fleet loop (adoptionRound). With release set, the
// first Adopt that returns a batch returns, and its pickUp runs, only
// once release is closed.
type adoptWatch struct {
	*postgres.DB
	raw     *sql.DB
	replica string
	release chan struct{}
	adopted chan struct{} // closed by the first Adopt that returns a batch

	once  sync.Once
	mu    sync.Mutex
	beats int // renewals after the adoption
}

func (s *adoptWatch) Adopt(ctx context.Context) ([]*llmfleet.StoredRequest, []*llmfleet.PendingBatch, error) {
	q, b, err := s.DB.Adopt(ctx)
	if len(b) > 0 {
		s.once.Do(func() {
			close(s.adopted)
			if s.release != nil {
				<-s.release
			}
		})
	}
	return q, b, err
}

func (s *adoptWatch) Heartbeat(ctx context.Context, ttl time.Duration) (bool, error) {
	select {
	case <-s.adopted:
		s.mu.Lock()
		s.beats++
		s.mu.Unlock()
	default:
	}
	return s.DB.Heartbeat(ctx, ttl)
}

// endLease ends every run's lease of the replica (it paused).
func (s *adoptWatch) endLease(ctx context.Context) error {
	_, err := s.raw.ExecContext(ctx, `UPDATE replicas SET lease_until = clock_timestamp() - interval '1 second' WHERE name = $1`, s.replica)
	return err
}

// adoptionRound returns once a batch was adopted and, unless release is
// set, the fleet loop's round that adopted it is over (its pickUp done).
func (s *adoptWatch) adoptionRound() {
	<-s.adopted
	for renewed := s.release != nil; !renewed; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		renewed = s.beats > 0
		s.mu.Unlock()
	}
}

// renewedDuringRecord is a fleet's store whose first RecordCreated ends
// the replica's lease, waits for its next run's adoption of the batch (an
// intent still: the pickUp leaves it to the create under way) and is
// then refused as stale: as the real store refuses a record whose run
// tokens it read before the renewal that started that run.
type renewedDuringRecord struct {
	adoptWatch
	refused bool
}

func (s *renewedDuringRecord) RecordCreated(ctx context.Context, batchID, upstreamID string, createdAt time.Time) error {
	s.mu.Lock()
	first := !s.refused
	s.refused = true
	s.mu.Unlock()
	if !first {
		return s.DB.RecordCreated(ctx, batchID, upstreamID, createdAt)
	}
	if err := s.endLease(ctx); err != nil {
		return err
	}
	s.adoptionRound()
	return fmt.Errorf("postgres: batch %s is another replica's, or no longer in flight: %w", batchID, llmfleet.ErrStale)
}

// A batch recorded created under the token of the run a renewal has just
// started (the store switches tokens before the replica gives up what it
// held) is tracked after that renewal's relinquish, not before: the store
// names this process, alive, its owner, so no replica would adopt it, and
// a relinquish after its tracking would leave it tracked by none.
func TestFleetRecordedDuringRenewal(t *testing.T) {
	t.Parallel() // (a database schema of its own; waits on events)
	st := &recordedDuringRenewal{}
	a, f := watchedReplica(t, &st.adoptWatch, func(db *postgres.DB) llmfleet.Store { st.DB = db; return st })
	f.createHeld = make(chan struct{})
	st.release = f.createHeld
	st.recorded = func() bool { // recorded, and tracked or waiting for the renewal's end
		a.mu.Lock()
		defer a.mu.Unlock()
		a.lease.mu.Lock()
		defer a.lease.mu.Unlock()
		return a.trackers.countLocked() > 0 || a.lease.awaiting > 0
	}
	answered := submitted(t, a, 0, "lfr_renewal", "renewal")
	for f.count("create") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := st.endLease(t.Context()); err != nil {
		t.Fatal(err)
	}
	for a.lease.losses() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	trackedHere(t, a, "lfr_renewal", "the batch, recorded under the new run, was dropped by the renewal's relinquish: no replica tracks it")
	answeredOnce(t, a, f, answered)
}

// recordedDuringRenewal is a fleet's store whose first renewal that finds
// the lease ended lets the create under way return (release), and
// returns once that create was recorded (recorded): under the new run's
// token, which the renewal set.
type recordedDuringRenewal struct {
	adoptWatch
	recorded func() bool
	lost     sync.Once
}

func (s *recordedDuringRenewal) Heartbeat(ctx context.Context, ttl time.Duration) (bool, error) {
	held, err := s.adoptWatch.Heartbeat(ctx, ttl)
	if err == nil && !held {
		s.lost.Do(func() {
			close(s.release)
			for !s.recorded() {
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	return held, err
}

func (s *recordedDuringRenewal) Adopt(ctx context.Context) ([]*llmfleet.StoredRequest, []*llmfleet.PendingBatch, error) {
	return s.DB.Adopt(ctx) // (release is the create's, not the adoption's)
}

// A pool claimed by a replica whose lease ends during the claim (the
// intent committed under the ended run) and whose next run adopts the
// intent before the claim goes on is created by the claim alone: the
// pickUp leaves it to the create under way rather than reconcile it too,
// with twins of its requests that the reconciler would queue again, to
// be paid twice, once the create could no longer land.
func TestFleetClaimAdoptedMeanwhile(t *testing.T) {
	t.Parallel() // (a database schema of its own; waits on events)
	st := &claimAdopted{}
	a, f := watchedReplica(t, &st.adoptWatch, func(db *postgres.DB) llmfleet.Store { st.DB = db; return st },
		func(p *Policy) { p.SettleDelay = 50 * time.Millisecond }) // a reconcile looks at once
	answered := submitted(t, a, 0, "lfr_claimed", "claimed")
	answeredOnce(t, a, f, answered)
	if busy, idle := a.work.busy(); busy {
		<-idle // (a reconcile, should one have started, looks before it ends)
	}
	if n := f.count("find"); n != 0 {
		t.Fatalf("the batch the claim created was also reconciled by the adoption (%d looks for it)", n)
	}
}

// claimAdopted is a fleet's store whose first Claim ends the replica's
// lease, claims (committing the intent under the ended run) and returns
// once the replica's next run adopted the intent and finished that round.
type claimAdopted struct {
	adoptWatch
	claimed sync.Once
}

func (s *claimAdopted) Claim(ctx context.Context, b *llmfleet.StoredBatch, pool string, by time.Time, max int, maxBytes int64) ([]*llmfleet.StoredRequest, error) {
	first := false
	s.claimed.Do(func() { first = true })
	if first {
		if err := s.endLease(ctx); err != nil {
			return nil, err
		}
	}
	rows, err := s.DB.Claim(ctx, b, pool, by, max, maxBytes)
	if first && err == nil && len(rows) > 0 {
		s.adoptionRound()
	}
	return rows, err
}

// An intent whose requests were all answered meanwhile (rescued), adopted
// while its create is under way, is reconciled rather than concluded
// failed: the create lands, the adopter finds the batch by its tag and
// tracks it, and its result, paid, is ledgered late. Concluded failed at
// once, the batch would be tracked by no one and its bill never ledgered.
func TestFleetAdoptedIntentOfAnsweredRequests(t *testing.T) {
	t.Parallel() // (a database schema of its own; waits on events)
	u, raw := fleetDB(t)
	f := newFake()
	f.turnaround = func(string) time.Duration { return 200 * time.Millisecond }
	f.createHeld = make(chan struct{})
	v := fleetVault(t)
	pol := Policy{BatchMinSize: 1, PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond, SettleDelay: 50 * time.Millisecond}
	st := &pausedRenewals{}
	a, db := replica(t, u, "a", f, v, pol, func(db *postgres.DB) llmfleet.Store { st.DB = db; return st })
	answered := submitted(t, a, 0, "lfr_rescued", "rescued")
	for f.count("create") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	st.pause() // a pauses, its create under way
	now := time.Now()
	rescued := []llmfleet.Completion{{RequestID: "lfr_rescued", Result: &llmfleet.StoredResult{StatusCode: 200,
		Body: []byte(`{"type":"message","content":[{"type":"text","text":"rescue"}]}`), CompletedAt: now},
		Ledger: &llmfleet.LedgerEntry{RequestID: "lfr_rescued", Rescue: llmfleet.RescueSync, Route: llmfleet.RouteSync, Time: now}}}
	if _, err := db.CompleteRequests(t.Context(), rescued); err != nil { // (by the replica its caller waits on)
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(t.Context(), `UPDATE replicas SET lease_until = clock_timestamp() - interval '1 second' WHERE name = 'a'`); err != nil {
		t.Fatal(err)
	}
	replica(t, u, "b", f, v, pol, nil) // adopts a's intent as it opens
	var state string
	if err := raw.QueryRowContext(t.Context(), `SELECT state FROM batches`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	close(f.createHeld) // a's create lands
	st.resume()
	if state == string(llmfleet.BatchFailed) {
		t.Fatal("the adopted intent of answered requests was concluded failed while its create could still land")
	}
	if resp := <-answered; resp == nil || !strings.Contains(string(resp.Body), "rescue") {
		t.Fatalf("a's caller got %+v, want the rescue's answer", resp)
	}
	for late := false; !late; time.Sleep(20 * time.Millisecond) {
		entries, err := db.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			late = late || e.Rescue == llmfleet.RescueLate
		}
	}
}

// The same when the flight's answers were held rather than delivered (its
// lease not known held when the sync calls came back: the replica could
// not renew) and the renewal that ends the pause finds the lease ended:
// the held answers of the sync calls, paid, are delivered as the flight
// is given up, and the run that adopts the batch again sends nothing for
// the requests they answered.
func TestFleetRerouteHeldRelinquished(t *testing.T) {
	t.Parallel() // (a database schema of its own; waits on events)
	st := &pausedRenewals{}
	a, f, db, answered := failedBatchReplica(t, 4*time.Second, st.pause, // longer than the lease: it is not known held when the call comes back
		func(db *postgres.DB) llmfleet.Store { st.DB = db; return st })
	for held := false; !held; time.Sleep(10 * time.Millisecond) {
		a.mu.Lock()
		for _, tr := range a.trackers.m {
			for _, fl := range tr.flights {
				held = held || fl.held != nil
			}
		}
		a.mu.Unlock()
	}
	st.resume()
	if sent, ledgered := paidAndLedgered(t, a, f, db, answered); sent != 1 || ledgered != 1 {
		t.Fatalf("%d sync calls paid, %d ledgered; want one of each", sent, ledgered)
	}
}

// pausedRenewals is a fleet's store whose renewals wait while paused (the
// replica paused, or cut off from the database).
type pausedRenewals struct {
	*postgres.DB
	mu     sync.Mutex
	paused chan struct{}
}

func (s *pausedRenewals) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = make(chan struct{})
}

func (s *pausedRenewals) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.paused)
	s.paused = nil
}

func (s *pausedRenewals) Heartbeat(ctx context.Context, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	p := s.paused
	s.mu.Unlock()
	if p != nil {
		<-p
	}
	return s.DB.Heartbeat(ctx, ttl)
}

// A batch that failed as a whole sends its requests sync; when a renewal
// that finds the lease ended gives the flight up while those calls are
// under way, their answers, paid, are still stored or ledgered: every
// sync call the provider bills is in the ledger (the run that adopts the
// batch again may send them once more, ledgered too).
func TestFleetRerouteRelinquished(t *testing.T) {
	t.Parallel()                                                                       // (a database schema of its own; waits on events)
	a, f, db, answered := failedBatchReplica(t, 2500*time.Millisecond, func() {}, nil) // a renewal (every second) comes meanwhile
	if sent, ledgered := paidAndLedgered(t, a, f, db, answered); sent != ledgered {
		t.Fatalf("%d sync calls paid, %d ledgered", sent, ledgered)
	}
}

// failedBatchReplica opens replica "a" (its store made by wrap, if not
// nil) over a provider whose batches fail as a whole and whose sync calls
// take send; the first sync call runs first, then ends a's lease. It
// submits a request with a minute of budget, whose answer comes on the
// channel returned.
func failedBatchReplica(t *testing.T, send time.Duration, first func(), wrap func(*postgres.DB) llmfleet.Store) (*Dispatcher, *fakeProvider, *postgres.DB, <-chan *llmfleet.Response) {
	u, raw := fleetDB(t)
	f := newFake()
	f.turnaround = func(string) time.Duration { return 100 * time.Millisecond }
	f.failure = &llmfleet.Error{StatusCode: 500, Type: "api_error", Message: "batch failed"}
	f.sendDelay = send
	var once sync.Once
	f.onSend = func() {
		once.Do(func() {
			first()
			if _, err := raw.Exec(`UPDATE replicas SET lease_until = clock_timestamp() - interval '1 second' WHERE name = 'a'`); err != nil {
				t.Error(err)
			}
		})
	}
	a, db := replica(t, u, "a", f, fleetVault(t), Policy{BatchMinSize: 1, PollInterval: 50 * time.Millisecond,
		MaxPollInterval: 100 * time.Millisecond, SyncLatencyPrior: 100 * time.Millisecond}, wrap)
	return a, f, db, submitted(t, a, time.Minute, "lfr_reroute", "reroute")
}

// paidAndLedgered waits for the answer and for a's work to end, and
// returns the sync calls the provider was paid for and the ledger's
// entries.
func paidAndLedgered(t *testing.T, a *Dispatcher, f *fakeProvider, db *postgres.DB, answered <-chan *llmfleet.Response) (sent, ledgered int) {
	t.Helper()
	if resp := <-answered; resp == nil {
		t.Fatal("no answer")
	}
	if busy, idle := a.work.busy(); busy {
		<-idle
	}
	entries, err := db.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return f.count("send"), len(entries)
}

// answeredFromStore stores text as the answer of request id, as another
// replica would, and checks that the caller waiting on answered gets it.
func answeredFromStore(t *testing.T, st llmfleet.Store, answered <-chan *llmfleet.Response, id, text string) {
	t.Helper()
	done := []llmfleet.Completion{{RequestID: id, Result: &llmfleet.StoredResult{StatusCode: 200,
		Body: []byte(`{"type":"message","content":[{"type":"text","text":"` + text + `"}]}`), CompletedAt: time.Now()}}}
	if _, err := st.CompleteRequests(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	if resp := <-answered; resp == nil || !strings.Contains(string(resp.Body), text) {
		t.Fatalf("the caller got %+v, want the answer stored by another replica (%q)", resp, text)
	}
}

// claimFails is a fleet's store whose first Claim fails (the database
// unreachable for a moment).
type claimFails struct {
	*postgres.DB
	mu    sync.Mutex
	fails int
}

func (s *claimFails) Claim(ctx context.Context, b *llmfleet.StoredBatch, pool string, by time.Time, max int, maxBytes int64) ([]*llmfleet.StoredRequest, error) {
	s.mu.Lock()
	fail := s.fails > 0
	s.fails--
	s.mu.Unlock()
	if fail {
		return nil, errors.New("connection refused")
	}
	return s.DB.Claim(ctx, b, pool, by, max, maxBytes)
}

// A pool whose claim fails is not lost: its request, still queued in the
// store, is pooled again by the periodic look and goes out once.
func TestFleetClaimFails(t *testing.T) {
	u := pgtest.URL(t)
	v := fleetVault(t)
	f := newFake()
	f.turnaround = func(string) time.Duration { return 100 * time.Millisecond }
	a, _ := replica(t, u, "a", f, v, Policy{BatchMinSize: 1, PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond},
		func(db *postgres.DB) llmfleet.Store { return &claimFails{DB: db, fails: 1} })
	resp, err := a.SubmitBatch(t.Context(), 0, req("k1", "claimed late"))
	if err != nil || !strings.Contains(string(resp.Body), "claimed late") {
		t.Fatalf("answer %+v, %v; want its own", resp, err)
	}
	if n := f.calls["create"]; n != 1 {
		t.Errorf("%d batches created, want 1", n)
	}
}

// Issue 20, finding 7: a rescue made by another replica. A's rescue
// answers a request B batched, at A's rescue time (A predicts slow sync
// calls); B has learned that sync calls are quick, so by its own
// prediction no rescue could have been made yet when the batch answers.
// B still records its batch answer as paid and not delivered: the store
// says its completion came second, whatever B predicts.
func TestFleetRescueByAnotherReplicaIsLedgered(t *testing.T) {
	u := pgtest.URL(t)
	v := fleetVault(t)
	f := newFake()
	f.turnaround = func(string) time.Duration { return 1500 * time.Millisecond }
	base := Policy{BatchMinSize: 1000, RescueMargin: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond, TurnaroundPrior: 10 * time.Millisecond}
	polA, polB := base, base
	polA.BatchWindow, polA.SyncLatencyPrior = time.Hour, time.Second // rescues at deadline - 1.1s
	polB.BatchWindow, polB.SyncLatencyPrior = 50*time.Millisecond, 10*time.Millisecond
	a, db := replica(t, u, "a", f, v, polA, nil)
	b, _ := replica(t, u, "b", f, v, polB, nil)

	rescued := submitted(t, a, 2*time.Second, "lfr_rescued7", "rescued")
	batched := submitted(t, b, 0, "lfr_batched7", "batched")
	if resp := <-rescued; resp == nil || resp.Route != llmfleet.RouteSync {
		t.Fatalf("the rescued request: %+v; want the rescue's sync answer", resp)
	}
	if resp := <-batched; resp == nil {
		t.Fatal("the batched request got no answer")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, err := db.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var parts []llmfleet.Rescue
		for _, e := range entries {
			if e.RequestID == "lfr_rescued7" {
				parts = append(parts, e.Rescue)
			}
		}
		if len(parts) == 2 && parts[0] == llmfleet.RescueSync && parts[1] == llmfleet.RescueLate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger of the rescued request: %q, want [sync late] (%d sync calls and %d batch results billed)",
				parts, f.count("send"), f.count("create"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 20, finding 3, on a real PostgreSQL: the requests table locked
// (LOCK TABLE) for longer than a caller's budget. The caller is answered
// sync within its budget; its request, whose write was canceled on the
// server, is never stored nor batched once the lock is released.
func TestTableLockLongerThanTheBudget(t *testing.T) {
	u := pgtest.URL(t)
	f := newFake()
	f.sendDelay = 100 * time.Millisecond
	d, db := replica(t, u, "a", f, fleetVault(t), Policy{BatchMinSize: 1, SyncLatencyPrior: 500 * time.Millisecond,
		RescueMargin: 200 * time.Millisecond, PollInterval: 50 * time.Millisecond, TurnaroundPrior: 10 * time.Millisecond}, nil)
	lock, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	tx, err := lock.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE requests IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	r := req("k1", "locked out")
	r.ID = "lfr_lockedout"
	resp, err := d.SubmitBatch(t.Context(), 3*time.Second, r)
	if err != nil || resp.Route != llmfleet.RouteSync {
		t.Fatalf("under the lock: %+v, %v; want the sync answer", resp, err)
	}
	time.Sleep(time.Second) // the lock outlasts the budget
	tx.Rollback()
	time.Sleep(time.Second)
	if _, err := db.GetRequest(t.Context(), "lfr_lockedout"); !errors.Is(err, llmfleet.ErrNotFound) {
		t.Errorf("the request after the lock: %v; want it never stored", err)
	}
	if n := f.count("create"); n != 0 || f.count("send") != 1 {
		t.Errorf("%d batches, %d sync calls; want the one sync call", n, f.count("send"))
	}
}
