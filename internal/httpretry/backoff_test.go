package httpretry

import (
	"testing"
	"time"
)

func TestBackoffSchedule(t *testing.T) {
	for _, c := range []struct {
		n        int
		full     time.Duration // no jitter
		shortest time.Duration // a quarter off
	}{
		{0, 500 * time.Millisecond, 375 * time.Millisecond},
		{1, time.Second, 750 * time.Millisecond},
		{2, 2 * time.Second, 1500 * time.Millisecond},
		{3, 4 * time.Second, 3 * time.Second},
		{4, 8 * time.Second, 6 * time.Second},
		{5, 8 * time.Second, 6 * time.Second},
		{64, 8 * time.Second, 6 * time.Second},
		{-1, 500 * time.Millisecond, 375 * time.Millisecond},
	} {
		if got := backoff(c.n, func(int64) int64 { return 0 }); got != c.full {
			t.Errorf("backoff(%d) without jitter = %v; want %v", c.n, got, c.full)
		}
		if got := backoff(c.n, func(n int64) int64 { return n - 1 }); got != c.shortest {
			t.Errorf("backoff(%d) with the most jitter = %v; want %v", c.n, got, c.shortest)
		}
		for range 50 {
			if got := Backoff(c.n); got < c.shortest || got > c.full {
				t.Fatalf("Backoff(%d) = %v; want in [%v, %v]", c.n, got, c.shortest, c.full)
			}
		}
	}
}

func TestMaxRetries(t *testing.T) {
	for _, c := range []struct{ n, def, want int }{
		{0, 2, 2}, {-1, 2, 0}, {5, 2, 5}, {1, 3, 1},
	} {
		if got := MaxRetries(c.n, c.def); got != c.want {
			t.Errorf("MaxRetries(%d, %d) = %d; want %d", c.n, c.def, got, c.want)
		}
	}
}
