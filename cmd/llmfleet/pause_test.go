package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// Issue 20, finding 4: a replica paused (SIGSTOP) for longer than its
// lease, with a batch of every replica's tickets in flight. The others
// adopt the batch and store its results; when the paused replica goes on
// (SIGCONT), its rescue timers are due and its tracker polls the batch
// it no longer owns. It must stop acting on what it no longer owns: no
// rescue pays for an answer already stored, and its delivery of the
// same batch results is no second, late answer. Over several rounds,
// from what the emulator billed: no prompt paid twice beyond the rescues
// the ledger records as late, and a ledger within 1% of the bill.
func TestReplicaPausedPastItsLease(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	db := pgtest.URL(t)
	u := newMatrixUpstream(t)
	u.emu.Turnaround = func(string, *rand.Rand) time.Duration { return 2 * time.Second }
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	key := "sk-ant-api03-pause-" + fmt.Sprint(time.Now().UnixNano())
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
	replicas := make([]*process, 3)
	for i := range replicas {
		window := "1h" // only replica 0 flushes: it claims every replica's tickets
		if i == 0 {
			window = "300ms"
		}
		replicas[i] = start(t, bin, logs[i], "serve", "--listen", "127.0.0.1:0", "--anthropic-url", u.srv.URL,
			"--db", db, "--secret-file", secret, "--replica-name", fmt.Sprintf("p%d", i), "--replica-lease", "2s",
			"--batch-window", window, "--batch-min-size", "1000", "--poll-interval", "100ms", "--max-poll-interval", "200ms",
			"--sync-latency-prior", "500ms", "--turnaround-prior", "1s", "--create-timeout", "5s", "--shutdown-timeout", "1s")
	}
	c := &crashClient{t: t, key: key}
	promptOf := map[string]string{}
	const rounds, perRound = 2, 30
	for round := range rounds {
		before := len(u.emu.Stats().Submissions)
		var ids, prompts []string
		for i := range perRound {
			p := fmt.Sprintf("pause: round %d, ticket %d", round, i)
			// Rescue due 5.5s after acceptance (8s less 0.5s and the 2s margin).
			id := c.submitBudgeted(replicas[i%3].url, []string{p}, 8000)[0]
			ids, prompts = append(ids, id), append(prompts, p)
			promptOf[id] = p
		}
		u.waitFor(t, "the round's tickets sent in a batch", func() bool {
			return len(u.emu.Stats().Submissions) >= before+perRound
		})
		paused := time.Now()
		replicas[0].cmd.Process.Signal(syscall.SIGSTOP)
		// The batch ends 2s after its create; replicas 1 and 2 adopt it
		// once replica 0's lease has ended and store its results, before
		// the rescue times; replica 0 wakes after them.
		time.Sleep(time.Until(paused.Add(7 * time.Second)))
		replicas[0].cmd.Process.Signal(syscall.SIGCONT)
		c.resolveAny(replicas[1].url, ids, prompts)
		time.Sleep(2 * time.Second) // replica 0's polls and rescues, if any, are done
	}
	for _, p := range replicas {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}
	store, err := postgres.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	entries, err := store.Ledger(context.Background(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	checkBill(t, u.emu.Stats(), entries, promptOf).require(t, "replica paused past its lease")
}
