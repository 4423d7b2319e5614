package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/sqlite"
)

// smallDisk mounts a tmpfs of size bytes for the test and returns its
// directory; the test is skipped where mounting is not allowed (not
// root), and fails in CI, which runs as root.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs: %v: %s", err, out)
		}
		t.Skipf("no small disk to fill (mount tmpfs: %v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file in dir until the disk is full, and returns the
// function that frees the space again.
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last bytes, a page at a time.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	f.Close()
	return func() { os.Remove(path) }
}

// Issue 20, finding 5: the disk of a SQLite-backed serve fills up after
// its batch's results were read: they cannot be stored. At the tickets'
// rescue time their answers are in hand, so none is paid for again; once
// space returns, every result is stored with its ledger entry, once.
// From what the emulator billed: no prompt paid twice beyond the rescues
// the ledger records as late, and a ledger within 1% of the bill.
func TestFullDiskAfterResults(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	disk := smallDisk(t, 16<<20)
	u := newMatrixUpstream(t)
	u.emu.Turnaround = func(string, *rand.Rand) time.Duration { return time.Second }
	logs := filepath.Join(t.TempDir(), "serve.log")
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("LLMFLEET_CRASH_LOGS") != "" {
			b, _ := os.ReadFile(logs)
			t.Logf("logs of serve:\n%s", b)
		}
	})
	db := filepath.Join(disk, "state.db")
	p := start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", u.srv.URL,
		"--db", db, "--secret-file", filepath.Join(t.TempDir(), "secret"),
		"--batch-window", "200ms", "--batch-min-size", "1000", "--poll-interval", "100ms", "--max-poll-interval", "500ms",
		"--sync-latency-prior", "1s", "--turnaround-prior", "1s", "--create-timeout", "5s", "--shutdown-timeout", "20s")
	c := &crashClient{t: t, key: "sk-ant-api03-fulldisk-" + fmt.Sprint(time.Now().UnixNano())}
	u.freeze() // the batch ends only once the disk is full
	var prompts []string
	for i := range 100 {
		prompts = append(prompts, fmt.Sprintf("full disk: ticket %d", i))
	}
	// Rescues due 9s after acceptance (12s less 1s and the 2s margin).
	ids := c.submitBudgeted(p.url, prompts, 12000)
	u.waitFor(t, "the tickets sent in a batch", func() bool { return len(u.emu.Stats().Submissions) >= len(prompts) })
	free := fill(t, disk)
	u.thaw()
	u.waitFor(t, "the batch's results read", func() bool { return u.handled("results") > 0 })
	time.Sleep(12 * time.Second) // past every rescue time and deadline, the disk still full
	free()
	c.resolveAny(p.url, ids, prompts)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve did not stop cleanly: %v", err)
	}
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	entries, err := store.Ledger(context.Background(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	promptOf := map[string]string{}
	for i, id := range ids {
		promptOf[id] = prompts[i]
	}
	checkBill(t, u.emu.Stats(), entries, promptOf).require(t, "full disk after the results were read")
}
