package llmfleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := llmfleet.Sleep(context.Background(), nil, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Minute {
			t.Fatalf("slept %v, want 1m", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := llmfleet.Sleep(ctx, llmfleet.RealClock{}, time.Hour); err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
		if got := time.Since(start); got != time.Minute+time.Second {
			t.Fatalf("woke at %v, want 1m1s", got)
		}
	})
}
