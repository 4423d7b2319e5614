package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/storetest"
)

// crashChildEnv names the database a child process of TestCrash writes to.
const crashChildEnv = "LLMFLEET_SQLITE_CRASH_CHILD"

// TestCrash kills a process with SIGKILL while it is adding requests with
// many goroutines, and checks that every request whose AddRequest had
// returned is in the database when it is opened again.
func TestCrash(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 300 {
		if id, ok := strings.CutPrefix(sc.Text(), "stored "); ok {
			acked = append(acked, id)
		}
	}
	// Killed while its goroutines are in the middle of adding more.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("child acknowledged %d requests before it stopped", len(acked))
	}
	d := open(t, path)
	for _, id := range acked {
		r, err := d.GetRequest(t.Context(), id)
		if err != nil {
			t.Fatalf("request %s acknowledged before the crash: %v", id, err)
		}
		if !bytes.Equal(r.Body, storetest.BenchBody) {
			t.Fatalf("request %s: body changed", id)
		}
	}
}

// crashChild adds requests from 16 goroutines and prints the id of each
// once AddRequest returned, until it is killed.
func crashChild(path string) {
	d := &sqlite.DB{Path: path}
	if err := d.Open(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var (
		mu sync.Mutex
		n  atomic.Int64
		wg sync.WaitGroup
	)
	w := bufio.NewWriter(os.Stdout)
	// A safety net should the parent die without killing the child.
	stop := time.Now().Add(time.Minute)
	for range 16 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				id := fmt.Sprintf("lfr_%08d", n.Add(1))
				err := d.AddRequest(context.Background(), &llmfleet.StoredRequest{ID: id, Provider: "anthropic",
					CredentialID: "cred_x", Body: storetest.BenchBody, Model: "m", AcceptedAt: time.Now()})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintln(w, "stored", id)
				w.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(0)
}
