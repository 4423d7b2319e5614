package ledger

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestGroupWriterWindow checks that a windowed writer holds the first
// entry of a group for its window and writes the entries of the window in
// one store call, that Flush cuts the window short, and that a full
// backlog does too.
func TestGroupWriterWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{}
		w := NewGroupWriter(st, 0, 20*time.Millisecond, nil)
		defer w.Close(context.Background())
		add(t, w, "a", "b")
		synctest.Wait()
		if got := st.calls(); got != "" {
			t.Fatalf("written before the window ended: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
		add(t, w, "c")
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if got := st.calls(); got != "a,b,c" {
			t.Fatalf("after the window: %q, want a,b,c", got)
		}
		add(t, w, "d")
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.calls(); got != "a,b,c|d" {
			t.Fatalf("Flush did not cut the window short: %q", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{}
		w := NewGroupWriter(st, 2, time.Hour, nil)
		add(t, w, "a", "b")
		synctest.Wait()
		if got := st.calls(); got != "a,b" {
			t.Fatalf("a full backlog waited for the window: %q", got)
		}
		add(t, w, "c")
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.calls(); got != "a,b|c" {
			t.Fatalf("Close left entries unwritten: %q", got)
		}
	})
}
