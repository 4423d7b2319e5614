package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// Finding: two llmfleet serve on one SQLite file started without a word,
// and one stole the other's pooled requests. The second now refuses to
// start and names the holder's pid.
func TestServeRefusesADatabaseInUse(t *testing.T) {
	db := filepath.Join(t.TempDir(), "llmfleet.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--db", db, "--listen", "127.0.0.1:0", "--anthropic-url", "http://127.0.0.1:1"}, out, io.Discard)
	}()
	select {
	case <-out:
	case err := <-done:
		t.Fatalf("first serve ended: %v", err)
	}

	err := runServe(context.Background(), []string{"--db", db, "--listen", "127.0.0.1:0", "--anthropic-url", "http://127.0.0.1:1"}, io.Discard, io.Discard)
	if !errors.Is(err, llmfleet.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), db) {
		t.Fatalf("second serve on the same database: %v", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first serve: %v", err)
	}
}
