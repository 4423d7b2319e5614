package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// TestCrashMatrix kills the real "llmfleet serve" with SIGKILL at each
// point of a batched request's life, restarts it on the same database and
// reads every ticket back. Whatever the point, no prompt may be paid for
// twice, no paid result may be lost, every ticket must be answered with
// the answer to its own prompt, and no batch may mix API keys.
//
// The emulator runs in the test process, behind a handler that lets the
// test see what serve sends and hold it, so that each kill point is
// reached by waiting for an event, never for a time: a request held by a
// Fault's Delay stays held (the emulator's Sleep is the test's) until the
// test lets it go, unprocessed, after the kill; and the emulator's clock
// can stand still until the kill, so that nothing ends or lands before
// it.
//
// It runs with each provider of matrixProviders: Anthropic's Message
// Batches (the emulator package) and Gemini's Batch Mode (geminiemu,
// through the Gemini face), each on SQLite and PostgreSQL.
//
// Each point submits matrixPerKey prompts under each of two API keys,
// alternating between the keys; serve sends a pool out when it holds
// matrixBatch requests (never on its window), so that each key makes two
// batches of the same size, which only their tags tell apart.
func TestCrashMatrix(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)

	points := []matrixPoint{{
		// Accepted and acknowledged (202), not yet sent: the pools wait
		// for more requests than will come.
		name:     "queued",
		firstMin: 100,
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			for i, id := range m.ids {
				if st := m.client(i).status(m.serve.url, id); st != string(llmfleet.RequestQueued) {
					t.Fatalf("ticket %s is %q before the kill, want queued", id, st)
				}
			}
			if n := u.api.creates(); n != 0 {
				t.Fatalf("%d creates before the kill", n)
			}
		},
	}, {
		// Every create reached the provider, which holds them unanswered;
		// they are dropped unprocessed after the kill, so nothing was
		// made: the restart must prove that (a list after the create
		// deadline) and send the requests again, once.
		name: "create sent, unanswered",
		arm:  func(u *matrixUpstream) { u.api.holdCreates() },
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			u.waitFor(t, "every create held", func() bool { return u.heldCount() == matrixBatches })
		},
		after: func(u *matrixUpstream) {
			u.api.clearFaults()
			u.releaseHeld()
		},
	}, {
		// Every create made its batch, but its answer was lost (serve is
		// reconciling): the restart must find the batches by their tags
		// and adopt each by its own intent, not create them again.
		name: "create made, answer lost",
		arm:  func(u *matrixUpstream) { u.api.dropCreateAnswers(matrixBatches) },
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			u.waitFor(t, "every create made, its answer dropped", func() bool { return u.handled(endpointCreate) == matrixBatches })
		},
	}, {
		// Every create was read and its connection dropped; the batches
		// land only after the kill, and after the restarted serve first
		// looked for them (the emulator's clock stands still until then),
		// all at once, within the create deadline: the restart must not
		// conclude anything from that early look, wait for the batches
		// and adopt each by its own intent.
		name: "create lands after the kill",
		arm: func(u *matrixUpstream) {
			u.freeze()
			u.api.landCreatesLate(matrixCreateTimeout/2, matrixBatches)
		},
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			u.waitFor(t, "every create read and dropped", func() bool { return u.handled(endpointCreate) == matrixBatches })
			for _, k := range m.keys {
				if n := u.api.batchesCreated(k); n != 0 {
					t.Fatalf("%d batches landed before the kill", n)
				}
			}
		},
		restarted: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			// The batches land once the restarted serve has listed each
			// key's batches (a list that must prove nothing), or, should
			// serve be too slow to, still within their creates'
			// deadlines: a batch landing later than that may be paid
			// twice, by the reconciler's contract.
			thawBy := u.frozenAt().Add(matrixCreateTimeout)
			for !u.polledSince(m.statusAtStart, m.keys) && time.Now().Before(thawBy) {
				time.Sleep(5 * time.Millisecond)
			}
			m.note = fmt.Sprintf("; the batches landed after the restart's first look: %v", u.polledSince(m.statusAtStart, m.keys))
			u.thaw()
		},
	}, {
		// Every batch exists upstream and serve has polled each key's
		// batches since (the emulator's clock stands still, so none ends
		// before the kill).
		name: "polling",
		arm:  func(u *matrixUpstream) { u.freeze() },
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			u.waitFor(t, "every batch created", func() bool { return u.api.batchCount() == matrixBatches })
			before := u.statusCalls()
			u.waitFor(t, "each key's batches polled", func() bool { return u.polledSince(before, m.keys) })
		},
		after: func(u *matrixUpstream) { u.thaw() },
	}, {
		// The batches ended and serve is downloading results for each key
		// (Anthropic: one download at a time per key, the other batch
		// waits; Gemini: the read of an ended batch carries its results),
		// which the provider holds; the downloads are dropped after the
		// kill.
		name: "results download",
		arm:  func(u *matrixUpstream) { u.api.holdResults() },
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			u.waitFor(t, "a results download per key held", func() bool { return u.heldCount() >= len(m.keys) })
		},
		after: func(u *matrixUpstream) {
			u.api.clearFaults()
			u.releaseHeld()
		},
	}, {
		// The provider has served a batch's results in full: serve is
		// storing them and answering (or has just done so) when it dies,
		// with the other batches ended or about to.
		name: "answering",
		reach: func(t *testing.T, u *matrixUpstream, m *matrixRun) {
			u.waitFor(t, "results served", func() bool { return u.api.resultsServed() >= 1 })
		},
		note: func(u *matrixUpstream) string {
			// A batch whose results were read twice was killed before
			// they were stored; once, after (or never before the kill).
			return fmt.Sprintf("; batches whose results were read again after the restart: %d", u.api.resultsReadAgain())
		},
	}}

	// Every point with each provider's batches, on each store: a SQLite
	// file, and a schema of its own on the test PostgreSQL server. The
	// four sequences run at once (each has its own emulator, state and
	// serve, and mostly waits), each from a goroutine of its own, so that
	// -parallel does not hold them back.
	var wg sync.WaitGroup
	for _, prov := range matrixProviders {
		for _, store := range []string{"sqlite", "postgres"} {
			wg.Go(func() { t.Run(prov.name+"/"+store, func(t *testing.T) { runMatrix(t, bin, prov, store, points) }) })
		}
	}
	wg.Wait()
}

// matrixPoint is one kill point of TestCrashMatrix.
type matrixPoint struct {
	name string
	// firstMin is the batch-min-size of the serve that is killed (the
	// restarted one uses matrixBatch).
	firstMin int
	// arm prepares the emulator before the tickets are submitted.
	arm func(u *matrixUpstream)
	// reach waits until serve is at the kill point.
	reach func(t *testing.T, u *matrixUpstream, m *matrixRun)
	// after runs once serve is dead, before it is restarted.
	after func(u *matrixUpstream)
	// restarted runs once serve is restarted, before the tickets
	// are read.
	restarted func(t *testing.T, u *matrixUpstream, m *matrixRun)
	// note, if set, says what the summary line adds once all is done.
	note func(u *matrixUpstream) string
}

// runMatrix runs every point with serve's state on store.
func runMatrix(t *testing.T, bin string, prov matrixProvider, store string, points []matrixPoint) {
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			u := newMatrixUpstreamOf(t, prov)
			m := newMatrixRun(t, bin, u, strings.ReplaceAll(pt.name, " ", "-"))
			if store == "postgres" {
				m.db = pgtest.URL(t)
			}
			if pt.arm != nil {
				pt.arm(u)
			}
			first := pt.firstMin
			if first == 0 {
				first = matrixBatch
			}
			m.serve = m.start(first)
			m.submit()
			pt.reach(t, u, m)
			m.serve.kill()
			http.DefaultClient.CloseIdleConnections() // none may reach the next serve
			if pt.after != nil {
				pt.after(u)
			}
			m.statusAtStart = u.statusCalls()
			m.serve = m.start(matrixBatch)
			if pt.restarted != nil {
				pt.restarted(t, u, m)
			}
			m.resolve()
			m.stop()
			if pt.note != nil {
				m.note += pt.note(u)
			}
			m.check()
		})
	}
}

// Settings of TestCrashMatrix.
const (
	// matrixBatch is the pool size at which serve sends a pool out.
	matrixBatch = 4
	// matrixPerKey is how many tickets each of the two keys submits.
	matrixPerKey = 2 * matrixBatch
	// matrixBatches is how many batches the tickets make.
	matrixBatches = 2 * matrixPerKey / matrixBatch
	// matrixTurnaround is the emulator's batch turnaround.
	matrixTurnaround = time.Second
	// matrixCreateTimeout is serve's --create-timeout: an unanswered
	// create is concluded not made no sooner than this (plus the 2s
	// settle delay) after it was sent.
	matrixCreateTimeout = 5 * time.Second
	// matrixDeadline bounds each wait of the test: it only keeps a
	// broken build from hanging, and is far above what any step takes.
	matrixDeadline = 90 * time.Second
)

// errDroppedByTest ends a request the emulator held for the test: it is
// dropped without being processed.
var errDroppedByTest = errors.New("held request dropped by the test")

// matrixUpstream is an emulator serving over HTTP in the test process,
// with a handler that counts what it answered and a Sleep that holds the
// requests a Fault delays until the test lets them go.
type matrixUpstream struct {
	prov matrixProvider
	api  matrixAPI
	emu  *emulator.Server // the Anthropic emulator, if it is the provider
	srv  *httptest.Server

	frozen atomic.Pointer[time.Time] // the emulator's clock, while it stands still

	mu       sync.Mutex
	held     int                    // requests held so far
	release  chan struct{}          // closed: held requests are dropped
	finished map[string]map[int]int // answers by endpoint and status; 0: no answer (dropped)
	status   map[string]int         // status calls (retrieve, list) by API key
}

func newMatrixUpstream(t *testing.T) *matrixUpstream {
	return newMatrixUpstreamOf(t, matrixProviders[0])
}

// newMatrixUpstreamOf returns the matrix's upstream of prov's emulator.
func newMatrixUpstreamOf(t *testing.T, prov matrixProvider) *matrixUpstream {
	u := &matrixUpstream{prov: prov, release: make(chan struct{}), finished: map[string]map[int]int{}, status: map[string]int{}}
	u.api = prov.upstream(u)
	if a, ok := u.api.(anthropicAPI); ok {
		u.emu = a.Server
	}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serveHTTP))
	t.Cleanup(u.srv.Close)
	t.Cleanup(u.releaseHeld) // before the server closes: it waits for its handlers
	return u
}

// matrixClock is the emulator's clock: the upstream's time (see now),
// and its waits hold the request (see hold).
type matrixClock struct{ u *matrixUpstream }

func (c matrixClock) Now() time.Time { return c.u.now() }

func (c matrixClock) AfterFunc(d time.Duration, f func()) llmfleet.Timer {
	return time.AfterFunc(d, f)
}

func (c matrixClock) Sleep(ctx context.Context, d time.Duration) error { return c.u.hold(ctx, d) }

func (u *matrixUpstream) now() time.Time {
	if t := u.frozen.Load(); t != nil {
		return *t
	}
	return time.Now()
}

// freeze stops the emulator's clock: no batch ends and no late create
// lands until thaw.
func (u *matrixUpstream) freeze() {
	now := time.Now()
	u.frozen.Store(&now)
}

// frozenAt returns the time the emulator's clock stands still at.
func (u *matrixUpstream) frozenAt() time.Time { return *u.frozen.Load() }

// thaw sets the emulator's clock going again, at the real time.
func (u *matrixUpstream) thaw() { u.frozen.Store(nil) }

// heldKey is the context key of the flag hold sets on a request it held.
type heldKey struct{}

// hold is the emulator's wait: it holds the request until the test
// releases it or its client goes away, then drops it unprocessed.
func (u *matrixUpstream) hold(ctx context.Context, _ time.Duration) error {
	if held, ok := ctx.Value(heldKey{}).(*atomic.Bool); ok {
		held.Store(true)
	}
	u.mu.Lock()
	u.held++
	release := u.release
	u.mu.Unlock()
	select {
	case <-release:
	case <-ctx.Done():
	}
	return errDroppedByTest
}

func (u *matrixUpstream) heldCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.held
}

// releaseHeld drops the held requests, and any held from now on.
func (u *matrixUpstream) releaseHeld() {
	u.mu.Lock()
	defer u.mu.Unlock()
	select {
	case <-u.release:
	default:
		close(u.release)
	}
}

// handled returns how many requests to endpoint the emulator has finished
// with: answered 200, or left without an answer by a Fault (not those the
// test held and dropped).
func (u *matrixUpstream) handled(endpoint string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.finished[endpoint][http.StatusOK] + u.finished[endpoint][0]
}

// statusCalls returns how many status calls (retrieve, list) each API
// key made.
func (u *matrixUpstream) statusCalls() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return maps.Clone(u.status)
}

// polledSince reports whether each of keys made a status call since
// statusCalls returned before.
func (u *matrixUpstream) polledSince(before map[string]int, keys []string) bool {
	now := u.statusCalls()
	for _, k := range keys {
		if now[k] <= before[k] {
			return false
		}
	}
	return true
}

func (u *matrixUpstream) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &matrixRecorder{ResponseWriter: w}
	held := new(atomic.Bool)
	u.api.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), heldKey{}, held)))
	if held.Load() && rec.status == 0 {
		// Dropped by the test: no answer, not even net/http's empty 200.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}
	endpoint, statusKey := u.api.classify(r)
	if statusKey != "" {
		u.mu.Lock()
		u.status[statusKey]++
		u.mu.Unlock()
		return
	}
	if endpoint == "" {
		return
	}
	if held.Load() {
		return // dropped by the test, unprocessed
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.finished[endpoint] == nil {
		u.finished[endpoint] = map[int]int{}
	}
	u.finished[endpoint][rec.status]++
}

// waitFor waits until cond holds. The deadline only keeps a broken build
// from hanging.
func (u *matrixUpstream) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(matrixDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never reached: %s (emulator: %s)", what, u.api.describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// matrixRecorder remembers the status an emulator answer carried (0 for
// none: the connection was dropped, or the request held and dropped).
type matrixRecorder struct {
	http.ResponseWriter
	status int
}

func (w *matrixRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *matrixRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the emulator hijack the connection to drop it.
func (w *matrixRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// matrixRun is one kill point: its database, its two keys and their
// tickets, and the serve process of the moment.
type matrixRun struct {
	t       *testing.T
	bin     string
	u       *matrixUpstream
	db      string // a SQLite file or a PostgreSQL URL
	secret  string // the secret file, kept across restarts
	logs    string
	keys    []string // the two API keys
	prompts []string // ticket i's prompt, sent with keys[owner[i]]
	owner   []int
	ids     []string // ticket ids
	answers []ticketAnswer
	serve   *process

	statusAtStart map[string]int // the status calls of each key when serve was restarted
	note          string         // what the summary adds, if anything
}

// ticketAnswer is how a ticket was last read.
type ticketAnswer struct {
	status int
	body   string
}

func newMatrixRun(t *testing.T, bin string, u *matrixUpstream, name string) *matrixRun {
	dir := t.TempDir()
	m := &matrixRun{t: t, bin: bin, u: u, db: filepath.Join(dir, "llmfleet.db"), logs: filepath.Join(dir, "logs"),
		secret: filepath.Join(dir, "secret")}
	for k := range 2 {
		m.keys = append(m.keys, fmt.Sprintf("%s-matrix-%c-%s", u.prov.keyPrefix, 'a'+k, llmfleet.NewID("")))
	}
	for i := range matrixPerKey {
		for k := range m.keys {
			m.prompts = append(m.prompts, fmt.Sprintf("%s: key %c, prompt %d", name, 'a'+k, i))
			m.owner = append(m.owner, k)
		}
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("LLMFLEET_CRASH_LOGS") != "" {
			b, _ := os.ReadFile(m.logs)
			t.Logf("logs of serve:\n%s", b)
		}
	})
	return m
}

// client returns a client of the provider's face with the key of ticket
// i.
func (m *matrixRun) client(i int) matrixClient {
	return m.u.prov.client(m.t, m.keys[m.owner[i]])
}

// start runs serve on the run's database. A pool goes out only once it
// holds minSize requests (its window is far longer than the test), and a
// batch holds at most minSize: on PostgreSQL a pool's claim takes every
// request accepted by then, so a loaded machine could otherwise make one
// batch of a key's two.
func (m *matrixRun) start(minSize int) *process {
	return start(m.t, m.bin, m.logs, "serve", "--listen", "127.0.0.1:0", m.u.prov.urlFlag, m.u.srv.URL,
		"--db", m.db, "--secret-file", m.secret, "--batch-window", "1h", "--batch-min-size", strconv.Itoa(minSize),
		"--batch-max-size", strconv.Itoa(minSize), "--poll-interval", "50ms", "--max-poll-interval", "200ms", "--turnaround-prior", matrixTurnaround.String(),
		"--create-timeout", matrixCreateTimeout.String(), "--shutdown-timeout", "1s", "--replica-name", "matrix")
}

// submit sends every ticket async, alternating between the keys.
func (m *matrixRun) submit() {
	for i, p := range m.prompts {
		m.ids = append(m.ids, m.client(i).submit(m.serve.url, []string{p})...)
	}
}

// resolve reads every ticket until it is answered. The deadline only
// keeps a broken build from hanging; a ticket still pending then is
// reported by check.
func (m *matrixRun) resolve() {
	m.answers = make([]ticketAnswer, len(m.ids))
	deadline := time.Now().Add(matrixDeadline)
	for i, id := range m.ids {
		for {
			code, b := m.client(i).ticket(m.serve.url, id)
			m.answers[i] = ticketAnswer{code, string(b)}
			if code != http.StatusAccepted || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// stop ends serve gracefully, so that it sends nothing more upstream.
func (m *matrixRun) stop() {
	p := m.serve
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		m.t.Errorf("serve did not stop cleanly: %v", err)
	}
}

// check counts what the provider was paid for against what the tickets
// got, logs the figures and fails on any prompt paid twice, any paid
// result lost, any ticket without its own answer, and any batch that
// mixed keys.
func (m *matrixRun) check() {
	t := m.t
	subs := m.u.api.submissions()
	counts := map[string]int{}
	for _, sub := range subs {
		counts[sub.Text]++
	}
	mine := map[string]int{} // prompt -> ticket
	for i, p := range m.prompts {
		mine[p] = i
	}
	var twice, lost, wrong, unknown []string
	for p, n := range counts {
		if _, ok := mine[p]; !ok {
			unknown = append(unknown, p)
		}
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%q ×%d", p, n))
		}
	}
	for i, p := range m.prompts {
		a := m.answers[i]
		ok := a.status == http.StatusOK && m.u.prov.answerText(a.body) == "Answer to: "+p
		if !ok {
			wrong = append(wrong, fmt.Sprintf("ticket %s (%q): %d %s", m.ids[i], p, a.status, a.body))
			if counts[p] > 0 {
				lost = append(lost, p)
			}
		} else if counts[p] == 0 {
			wrong = append(wrong, fmt.Sprintf("ticket %s (%q) answered but never sent in a batch", m.ids[i], p))
		}
	}
	owners := map[string]map[int]bool{} // batch -> keys of its prompts
	for _, sub := range subs {
		if owners[sub.BatchID] == nil {
			owners[sub.BatchID] = map[int]bool{}
		}
		if i, ok := mine[sub.Text]; ok {
			owners[sub.BatchID][m.owner[i]] = true
		}
	}
	var mixed []string
	for id, ks := range owners {
		if len(ks) > 1 {
			mixed = append(mixed, id)
		}
	}
	created := 0
	for _, k := range m.keys {
		created += m.u.api.batchesCreated(k)
	}
	t.Logf("%s: tickets %d, batches created %d, prompts paid twice %d, paid results lost %d, tickets without their own answer %d, batches mixing keys %d%s",
		t.Name(), len(m.ids), created, len(twice), len(lost), len(wrong), len(mixed), m.note)
	slices.Sort(twice)
	slices.Sort(mixed)
	if len(twice) > 0 {
		t.Errorf("prompts paid more than once: %v", twice)
	}
	if len(lost) > 0 {
		t.Errorf("paid results lost: %q", lost)
	}
	for _, w := range wrong {
		t.Errorf("%s", w)
	}
	if len(mixed) > 0 {
		t.Errorf("batches mixing API keys: %v", mixed)
	}
	if len(unknown) > 0 {
		t.Errorf("prompts the test never sent were submitted: %q", unknown)
	}
	if created != len(owners) {
		t.Errorf("the keys created %d batches, the submissions name %d", created, len(owners))
	}
}
