package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
)

// lockChildEnv names the database a child process of TestLockChild holds.
const lockChildEnv = "LLMFLEET_SQLITE_LOCK_CHILD"

// checkLocked checks that err is Open's refusal of path held by pid.
func checkLocked(t *testing.T, err error, path string, pid int) {
	t.Helper()
	if !errors.Is(err, llmfleet.ErrLocked) {
		t.Fatalf("Open of a database in use: error %v, want llmfleet.ErrLocked", err)
	}
	t.Logf("Open of a database in use: %v", err)
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("(pid %d)", pid)) {
		t.Errorf("Open of a database in use: %q does not name %s and pid %d", msg, path, pid)
	}
}

// lockHolder reads the pid written in the lock file of path.
func lockHolder(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("lock file holds %q: %v", b, err)
	}
	return pid
}

// TestLockSameProcess: a second DB of this process on an open database is
// refused, naming this process; it opens once the first is closed.
func TestLockSameProcess(t *testing.T) {
	if !sqlite.HasLock {
		t.Skip("no flock(2) on this system")
	}
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	first := open(t, path)
	if pid := lockHolder(t, path); pid != os.Getpid() {
		t.Errorf("lock file names pid %d, want %d", pid, os.Getpid())
	}
	second := &sqlite.DB{Path: path}
	err := second.Open(t.Context())
	if err == nil {
		second.Close()
	}
	checkLocked(t, err, path, os.Getpid())
	// The refused DB took nothing: the first goes on working.
	if err := first.PutCredential(t.Context(), "cred_a", []byte("sealed")); err != nil {
		t.Fatalf("first DB after a refused second: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// A DB whose Open was refused can be opened later.
	if err := second.Open(t.Context()); err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	defer second.Close()
	if _, err := second.GetCredential(t.Context(), "cred_a"); err != nil {
		t.Error(err)
	}
}

// TestLockChild: a child process holding the database makes Open fail
// naming its pid; once the child is killed with SIGKILL, which runs no
// cleanup, the database opens.
func TestLockChild(t *testing.T) {
	if path := os.Getenv(lockChildEnv); path != "" {
		lockChild(path)
		return
	}
	if !sqlite.HasLock {
		t.Skip("no flock(2) on this system")
	}
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // the child holds the database until it closes
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "open\n" {
		t.Fatalf("child: %q, %v; want it to report the database open", line, err)
	}

	d := &sqlite.DB{Path: path}
	err = d.Open(t.Context())
	if err == nil {
		d.Close()
	}
	checkLocked(t, err, path, cmd.Process.Pid)

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	d = open(t, path)
	if pid := lockHolder(t, path); pid != os.Getpid() {
		t.Errorf("lock file names pid %d after the takeover, want %d", pid, os.Getpid())
	}
	r, err := d.GetRequest(t.Context(), "lfr_child")
	if err != nil || r.State != llmfleet.RequestQueued {
		t.Errorf("the child's request: %v, %v", r, err)
	}
}

// lockChild opens the database, adds a request, reports "open" and holds
// the database until its stdin closes or it is killed.
func lockChild(path string) {
	d := &sqlite.DB{Path: path}
	err := d.Open(context.Background())
	if err == nil {
		err = d.AddRequest(context.Background(), &llmfleet.StoredRequest{ID: "lfr_child", Provider: "anthropic",
			CredentialID: "cred_x", Body: []byte(`{}`), Model: "m"})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("open")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
