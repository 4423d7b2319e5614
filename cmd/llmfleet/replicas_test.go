package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestReplicas runs three "llmfleet serve" replicas of one fleet on one
// fresh PostgreSQL database, behind no balancer but the test's own round
// robin: tickets of two API keys go to the replicas in turn, and some
// callers wait for their answers on a replica. Only replica 0 flushes its
// pools on its window (the others' windows are longer than the test), so
// it claims what every replica accepted: one batch per key. The
// emulator's clock stands still until replica 0 is killed with SIGKILL,
// its batches in flight, and replica 2 is restarted; then another
// replica adopts the batches once replica 0's lease ends, polls them and
// answers. Every ticket is read from a replica other than the one that
// accepted it, and must resolve to its own answer; no prompt may be paid
// twice; every batch must hold requests accepted by several replicas,
// and none may mix keys.
func TestReplicas(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	db := pgtest.URL(t)
	u := newMatrixUpstream(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	const perKey = 30
	keys := []string{"sk-ant-api03-fleet-a-" + llmfleet.NewID(""), "sk-ant-api03-fleet-b-" + llmfleet.NewID("")}

	logs := make([]string, 3)
	for i := range logs {
		logs[i] = filepath.Join(dir, fmt.Sprintf("replica%d.log", i))
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("LLMFLEET_CRASH_LOGS") != "" {
			for i, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("logs of replica %d:\n%s", i, b)
			}
		}
	})
	startReplica := func(i int) *process {
		window, lease := "1h", "2s"
		if i == 0 {
			window, lease = "3s", "1s"
		}
		return start(t, bin, logs[i], "serve", "--listen", "127.0.0.1:0", "--anthropic-url", u.srv.URL,
			"--db", db, "--secret-file", secret, "--replica-name", fmt.Sprintf("r%d", i), "--replica-lease", lease,
			"--batch-window", window, "--batch-min-size", "1000", "--poll-interval", "50ms", "--max-poll-interval", "200ms",
			"--turnaround-prior", matrixTurnaround.String(), "--create-timeout", "5s", "--shutdown-timeout", "1s")
	}
	u.freeze() // no batch ends before the kill
	replicas := make([]*process, 3)
	for i := range replicas {
		replicas[i] = startReplica(i)
	}

	// Callers waiting on replica 1 for batched answers.
	type waited struct {
		prompt, body string
		status       int
	}
	var waits []waited
	var wmu sync.Mutex
	var wg sync.WaitGroup
	for k, key := range keys {
		for j := range 2 {
			prompt := fmt.Sprintf("fleet: key %c, waiting caller %d", 'a'+k, j)
			wg.Go(func() {
				c := &crashClient{t: t, key: key}
				body := fmt.Sprintf(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":%q}]}`, prompt)
				code, _, b := c.do("POST", replicas[1].url+"/v1/messages", body,
					"llmfleet-route", "batch", "llmfleet-latency-budget-ms", "600000")
				wmu.Lock()
				waits = append(waits, waited{prompt, string(b), code})
				wmu.Unlock()
			})
		}
	}

	// A caller waiting on replica 2 with an Idempotency-Key, cut when
	// replica 2 restarts; it retries on replica 1.
	idemPrompt := "fleet: key a, idempotent caller"
	idemBody := fmt.Sprintf(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":%q}]}`, idemPrompt)
	idemHdr := []string{"llmfleet-route", "batch", "llmfleet-latency-budget-ms", "600000", "Idempotency-Key", "fleet-retry-1"}
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		req, _ := http.NewRequest("POST", replicas[2].url+"/v1/messages", strings.NewReader(idemBody))
		for _, h := range [][2]string{{"X-Api-Key", keys[0]}, {"Anthropic-Version", "2023-06-01"}, {"Content-Type", "application/json"},
			{idemHdr[0], idemHdr[1]}, {idemHdr[2], idemHdr[3]}, {idemHdr[4], idemHdr[5]}} {
			req.Header.Set(h[0], h[1])
		}
		if resp, err := (&http.Client{}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()

	// Tickets, round robin over the replicas, alternating keys.
	var prompts, ids []string
	var owner, acceptor []int
	for i := range 2 * perKey {
		k, r := i%2, i%3
		p := fmt.Sprintf("fleet: key %c, ticket %d", 'a'+k, i)
		c := &crashClient{t: t, key: keys[k]}
		ids = append(ids, c.submit(replicas[r].url, []string{p})...)
		prompts, owner, acceptor = append(prompts, p), append(owner, k), append(acceptor, r)
	}
	total := len(prompts) + 2*len(keys) + 1
	u.waitFor(t, "every prompt sent in a batch", func() bool { return len(u.emu.Stats().Submissions) >= total })

	// Replica 0 holds the batches: kill it. Restart replica 2.
	if owners := batchOwners(t, db); len(owners) != 1 || !strings.HasPrefix(owners[0], "r0/") {
		t.Fatalf("batches owned by %v, want replica 0 alone", owners)
	}
	replicas[0].kill()
	replicas[2].cmd.Process.Signal(syscall.SIGTERM)
	if err := replicas[2].cmd.Wait(); err != nil {
		t.Errorf("replica 2 did not stop cleanly: %v", err)
	}
	<-cut
	http.DefaultClient.CloseIdleConnections()
	replicas[2] = startReplica(2)
	// The retry reaches replica 1 while the request is in the dead
	// replica's batch: it waits for that request's answer.
	wg.Go(func() {
		c := &crashClient{t: t, key: keys[0]}
		code, _, b := c.do("POST", replicas[1].url+"/v1/messages", idemBody, idemHdr...)
		wmu.Lock()
		waits = append(waits, waited{idemPrompt, string(b), code})
		wmu.Unlock()
	})
	u.thaw()

	// Every ticket, from a live replica that did not accept it.
	deadline := time.Now().Add(matrixDeadline)
	var wrong []string
	for i, id := range ids {
		from := 1
		if acceptor[i] == 1 {
			from = 2
		}
		c := &crashClient{t: t, key: keys[owner[i]]}
		for {
			code, _, b := c.do("GET", replicas[from].url+proxy.RequestsPath+id, "")
			if code == http.StatusAccepted && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if code != http.StatusOK || answerText(string(b)) != "Answer to: "+prompts[i] {
				wrong = append(wrong, fmt.Sprintf("ticket %s (%q, accepted by replica %d, read from %d): %d %s", id, prompts[i], acceptor[i], from, code, b))
			}
			break
		}
	}
	wg.Wait()
	for _, w := range waits {
		if w.status != http.StatusOK || answerText(w.body) != "Answer to: "+w.prompt {
			wrong = append(wrong, fmt.Sprintf("waiting caller %q: %d %s", w.prompt, w.status, w.body))
		}
		prompts = append(prompts, w.prompt)
	}
	// Every replica shows the fleet's figures.
	var batched []int64
	for _, p := range replicas[1:] {
		_, _, b := (&crashClient{t: t, key: keys[0]}).do("GET", p.url+"/llmfleet/v1/stats", "")
		var sum struct {
			BatchedCalls int64 `json:"batched_calls"`
		}
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatalf("stats: %v: %s", err, b)
		}
		batched = append(batched, sum.BatchedCalls)
	}
	if batched[0] != int64(total) || batched[1] != int64(total) {
		t.Errorf("batched calls on replicas 1 and 2: %v, want %d on each (the fleet's)", batched, total)
	}
	for _, p := range replicas[1:] {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}

	st := u.emu.Stats()
	counts := st.SubmissionCounts()
	var twice []string
	for _, p := range prompts {
		if counts[p] != 1 {
			twice = append(twice, fmt.Sprintf("%q ×%d", p, counts[p]))
		}
	}
	acceptedBy := map[string]int{}
	keyOf := map[string]int{}
	for i, p := range prompts[:len(ids)] {
		acceptedBy[p], keyOf[p] = acceptor[i], owner[i]
	}
	batchKeys, batchReplicas := map[string]map[int]bool{}, map[string]map[int]bool{}
	for _, sub := range st.Submissions {
		if batchKeys[sub.BatchID] == nil {
			batchKeys[sub.BatchID], batchReplicas[sub.BatchID] = map[int]bool{}, map[int]bool{}
		}
		if r, ok := acceptedBy[sub.Text]; ok {
			batchKeys[sub.BatchID][keyOf[sub.Text]] = true
			batchReplicas[sub.BatchID][r] = true
		}
	}
	var mixed, lonely []string
	for b := range batchKeys {
		if len(batchKeys[b]) > 1 {
			mixed = append(mixed, b)
		}
		if len(batchReplicas[b]) < 3 {
			lonely = append(lonely, fmt.Sprintf("%s (replicas %v)", b, slices.Sorted(mapKeys(batchReplicas[b]))))
		}
	}
	t.Logf("replicas 3, tickets %d, waiting callers %d, batches %d, prompts paid twice %d, tickets without their own answer %d, batches mixing keys %d, batches not pooled across all replicas %d",
		len(ids), len(waits), len(batchKeys), len(twice), len(wrong), len(mixed), len(lonely))
	for _, w := range wrong {
		t.Error(w)
	}
	if len(twice) > 0 {
		t.Errorf("prompts not paid exactly once: %v", twice)
	}
	if len(mixed) > 0 {
		t.Errorf("batches mixing keys: %v", mixed)
	}
	if len(batchKeys) != len(keys) || len(lonely) > 0 {
		t.Errorf("%d batches, want one per key pooled across the replicas; not pooled: %v", len(batchKeys), lonely)
	}
}

// batchOwners returns the distinct owners of the fleet's batches.
func batchOwners(t *testing.T, db string) []string {
	t.Helper()
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rows, err := conn.QueryContext(ctx, `SELECT DISTINCT owner FROM batches ORDER BY owner`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestReplicasOnePool: 150 tickets of two keys sent round robin to three
// replicas with the same window, within it, go out as one batch per key:
// whichever replica's window ends first claims what all accepted.
func TestReplicasOnePool(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	db := pgtest.URL(t)
	u := newMatrixUpstream(t)
	dir := t.TempDir()
	keys := []string{"sk-ant-api03-pool-a-" + llmfleet.NewID(""), "sk-ant-api03-pool-b-" + llmfleet.NewID("")}
	logs := filepath.Join(dir, "replicas.log")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs)
			t.Logf("logs of the replicas:\n%s", b)
		}
	})
	var replicas []*process
	for i := range 3 {
		replicas = append(replicas, start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", u.srv.URL,
			"--db", db, "--secret-file", filepath.Join(dir, "secret"), "--replica-name", fmt.Sprintf("r%d", i),
			"--batch-window", "4s", "--batch-min-size", "1000", "--poll-interval", "50ms", "--max-poll-interval", "200ms", "--turnaround-prior", "1s"))
	}
	var ids, prompts []string
	var owner []int
	for i := range 150 {
		p := fmt.Sprintf("pool: ticket %d", i)
		ids = append(ids, (&crashClient{t: t, key: keys[i%2]}).submit(replicas[i%3].url, []string{p})...)
		prompts, owner = append(prompts, p), append(owner, i%2)
	}
	for i, id := range ids {
		(&crashClient{t: t, key: keys[owner[i]]}).resolve(replicas[(i+1)%3].url, []string{id}, []string{prompts[i]})
	}
	created := u.emu.BatchesCreated(keys[0]) + u.emu.BatchesCreated(keys[1])
	t.Logf("replicas 3, tickets %d, batches %d (a: %d, b: %d)", len(ids), created, u.emu.BatchesCreated(keys[0]), u.emu.BatchesCreated(keys[1]))
	if u.emu.BatchesCreated(keys[0]) != 1 || u.emu.BatchesCreated(keys[1]) != 1 {
		t.Errorf("%d batches, want one per key", created)
	}
	for _, p := range replicas {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}
}

// TestReplicasTakeOverCreate kills the replica whose batch creates are
// under way, each key's batch holding tickets both replicas accepted, and
// lets the other take them over once its lease ends: a create the
// provider never processed is proven not made (a list read after its
// deadline) and sent again, once; a create that made its batch, its
// answer lost, is found by its tag and adopted, never sent again.
func TestReplicasTakeOverCreate(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	for _, tc := range []struct {
		name    string
		fault   emulator.Fault
		reached func(u *matrixUpstream) bool
		batches int // batches created in all
	}{{
		name:    "create held, dropped",
		fault:   emulator.Fault{Method: "POST", Endpoint: emulator.EndpointCreate, Delay: time.Hour, Times: 2},
		reached: func(u *matrixUpstream) bool { return u.heldCount() == 2 },
		batches: 2, // the resent ones
	}, {
		name:    "create made, answer lost",
		fault:   emulator.Fault{Method: "POST", Endpoint: emulator.EndpointCreate, DropResponse: true, Times: 2},
		reached: func(u *matrixUpstream) bool { return u.handled(emulator.EndpointCreate) == 2 },
		batches: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.URL(t)
			u := newMatrixUpstream(t)
			dir := t.TempDir()
			logs := filepath.Join(dir, "replicas.log")
			t.Cleanup(func() {
				if t.Failed() || os.Getenv("LLMFLEET_CRASH_LOGS") != "" {
					b, _ := os.ReadFile(logs)
					t.Logf("logs of the replicas:\n%s", b)
				}
			})
			keys := []string{"sk-ant-api03-take-a-" + llmfleet.NewID(""), "sk-ant-api03-take-b-" + llmfleet.NewID("")}
			replica := func(i int, window, lease string) *process {
				return start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", u.srv.URL,
					"--db", db, "--secret-file", filepath.Join(dir, "secret"), "--replica-name", fmt.Sprintf("r%d", i),
					"--replica-lease", lease, "--batch-window", window, "--batch-min-size", "1000",
					"--poll-interval", "50ms", "--max-poll-interval", "200ms", "--turnaround-prior", "1s", "--create-timeout", "3s")
			}
			u.emu.InjectFault(tc.fault)
			// Replica 0 claims first (its window ends first); the other
			// flushes what it takes over on its own window.
			r0, r1 := replica(0, "1s", "1s"), replica(1, "3s", "2s")
			var ids, prompts []string
			var owner []int
			for i := range 12 {
				p := fmt.Sprintf("take over: ticket %d", i)
				at := []*process{r0, r1}[i%2]
				ids = append(ids, (&crashClient{t: t, key: keys[(i/2)%2]}).submit(at.url, []string{p})...)
				prompts, owner = append(prompts, p), append(owner, (i/2)%2)
			}
			u.waitFor(t, "both creates reached the provider", func() bool { return tc.reached(u) })
			r0.kill()
			u.emu.ClearFaults()
			u.releaseHeld()
			for i, id := range ids {
				(&crashClient{t: t, key: keys[owner[i]]}).resolve(r1.url, []string{id}, []string{prompts[i]})
			}
			r1.cmd.Process.Signal(syscall.SIGTERM)
			r1.cmd.Wait()
			counts := u.emu.Stats().SubmissionCounts()
			for _, p := range prompts {
				if counts[p] != 1 {
					t.Errorf("%q submitted %d times", p, counts[p])
				}
			}
			created := u.emu.BatchesCreated(keys[0]) + u.emu.BatchesCreated(keys[1])
			t.Logf("%s: tickets %d, batches created %d", tc.name, len(ids), created)
			if created != tc.batches {
				t.Errorf("%d batches created, want %d", created, tc.batches)
			}
		})
	}
}
