package httpretry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

var errBusy = errors.New("busy")

// script returns an attempt that answers tries in turn (the last one
// again once they run out) and counts the attempts made.
func script(tries []Try, made *int) func(int) (string, Try) {
	return func(n int) (string, Try) {
		if n != *made {
			panic("attempts not counted from 0")
		}
		*made++
		t := tries[min(n, len(tries)-1)]
		if t.Err == nil {
			return "ok", t
		}
		return "", t
	}
}

func TestDo(t *testing.T) {
	busy := Try{Err: errBusy, Retry: true, Wait: time.Second, Asked: true}
	final := Try{Err: errors.New("bad request")}
	for _, c := range []struct {
		name    string
		max     int
		tries   []Try
		made    int
		err     error
		elapsed time.Duration
	}{
		{"first succeeds", 2, []Try{{}}, 1, nil, 0},
		{"succeeds on a retry", 2, []Try{busy, busy, {}}, 3, nil, 2 * time.Second},
		{"retries up to max", 2, []Try{busy}, 3, errBusy, 2 * time.Second},
		{"no retries", 0, []Try{busy}, 1, errBusy, 0},
		{"stops on a non-retryable error", 5, []Try{busy, final, {}}, 2, final.Err, time.Second},
		{"the answer's wait", 1, []Try{{Err: errBusy, Retry: true, Wait: 42 * time.Second, Asked: true}, {}}, 2, nil, 42 * time.Second},
		{"an asked zero wait", 1, []Try{{Err: errBusy, Retry: true, Asked: true}, {}}, 2, nil, 0},
		{"backoff when none asked", 3, []Try{{Err: errBusy, Retry: true}}, 4, errBusy, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				made := 0
				v, err := Do(t.Context(), Loop{MaxRetries: c.max}, script(c.tries, &made))
				if made != c.made || !errors.Is(err, c.err) || (err == nil) != (v == "ok") {
					t.Fatalf("Do: %d attempts, %q, %v; want %d attempts, error %v", made, v, err, c.made, c.err)
				}
				elapsed := time.Since(start)
				if c.name == "backoff when none asked" {
					// 500 ms, 1 s and 2 s, each less up to a quarter.
					if lo, hi := 2625*time.Millisecond, 3500*time.Millisecond; elapsed < lo || elapsed > hi {
						t.Fatalf("waited %v; want in [%v, %v]", elapsed, lo, hi)
					}
				} else if elapsed != c.elapsed {
					t.Fatalf("waited %v; want %v", elapsed, c.elapsed)
				}
			})
		})
	}
}

// sleeper is a Clock that records the waits slept on it.
type sleeper struct {
	llmfleet.RealClock
	waits []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func TestDoSleepsOnTheClock(t *testing.T) {
	clock := &sleeper{}
	var told []time.Duration
	l := Loop{Clock: clock, MaxRetries: 2, Retrying: func(n int, err error, wait time.Duration) {
		if n != len(told)+1 || err != errBusy {
			t.Errorf("Retrying(%d, %v)", n, err)
		}
		told = append(told, wait)
	}}
	made := 0
	Do(context.Background(), l, script([]Try{
		{Err: errBusy, Retry: true, Wait: 3 * time.Second, Asked: true},
		{Err: errBusy, Retry: true, Wait: 5 * time.Second, Asked: true},
	}, &made))
	want := []time.Duration{3 * time.Second, 5 * time.Second}
	if made != 3 || len(clock.waits) != 2 || clock.waits[0] != want[0] || clock.waits[1] != want[1] {
		t.Fatalf("%d attempts, slept %v; want 3 attempts, %v", made, clock.waits, want)
	}
	if len(told) != 2 || told[0] != want[0] || told[1] != want[1] {
		t.Fatalf("Retrying told %v; want %v", told, want)
	}
}

func TestDoContext(t *testing.T) {
	busy := Try{Err: errBusy, Retry: true, Wait: 10 * time.Second, Asked: true}
	for _, c := range []struct {
		name    string
		bounded bool
		timeout time.Duration
		made    int
		err     error
		elapsed time.Duration
	}{
		// Unbounded, the wait is made until ctx ends, whose error is returned.
		{"unbounded, ends in a wait", false, 15 * time.Second, 2, context.DeadlineExceeded, 15 * time.Second},
		// Bounded, a wait past the deadline is not made.
		{"bounded, wait past the deadline", true, 5 * time.Second, 1, errBusy, 0},
		{"bounded, the second wait past it", true, 15 * time.Second, 2, errBusy, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), c.timeout)
				defer cancel()
				start := time.Now()
				made := 0
				_, err := Do(ctx, Loop{MaxRetries: 5, Bounded: c.bounded}, script([]Try{busy}, &made))
				if made != c.made || !errors.Is(err, c.err) || time.Since(start) != c.elapsed {
					t.Fatalf("%d attempts, %v after %v; want %d, %v after %v", made, err, time.Since(start), c.made, c.err, c.elapsed)
				}
			})
		})
	}
	t.Run("bounded, canceled in a wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(3*time.Second, cancel)
			made := 0
			_, err := Do(ctx, Loop{MaxRetries: 5, Bounded: true}, script([]Try{busy}, &made))
			if made != 1 || err != errBusy {
				t.Fatalf("%d attempts, %v; want 1, the attempt's error", made, err)
			}
		})
	})
	t.Run("ended before a retry", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		made := 0
		_, err := Do(ctx, Loop{MaxRetries: 5}, func(n int) (string, Try) {
			made++
			cancel() // ends during the attempt
			return "", busy
		})
		if made != 1 || err != errBusy {
			t.Fatalf("%d attempts, %v; want 1, the attempt's error", made, err)
		}
	})
}

func TestUnanswered(t *testing.T) {
	cause := errors.New("connection reset")
	for _, c := range []struct {
		written, idempotent, retry, notDelivered, uncertain bool
	}{
		{false, false, true, true, false},
		{false, true, true, true, false},
		{true, true, true, false, false},
		{true, false, false, false, true},
	} {
		tr := Unanswered(cause, c.written, c.idempotent)
		var ue *llmfleet.UncertainError
		if tr.Retry != c.retry || errors.Is(tr.Err, llmfleet.ErrNotDelivered) != c.notDelivered ||
			errors.As(tr.Err, &ue) != c.uncertain || !errors.Is(tr.Err, cause) || tr.Asked {
			t.Errorf("Unanswered(written %v, idempotent %v) = %+v", c.written, c.idempotent, tr)
		}
	}
}

func TestAnswered(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tr := Answered(errBusy, true, http.Header{"Retry-After": {"7"}}, now)
	if tr.Err != errBusy || !tr.Retry || !tr.Asked || tr.Wait != 7*time.Second {
		t.Fatalf("Answered with Retry-After: 7 = %+v", tr)
	}
	if tr := Answered(errBusy, false, nil, now); tr.Asked || tr.Retry {
		t.Fatalf("Answered without a header = %+v", tr)
	}
}

func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	res, written, err := Send(srv.Client(), req)
	if err != nil || !written || res.StatusCode != http.StatusTeapot {
		t.Fatalf("Send to a server: %v, written %v, %v", res, written, err)
	}
	res.Body.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: the request is never written
	req, _ = http.NewRequest(http.MethodPost, "http://"+addr, nil)
	if _, written, err := Send(http.DefaultClient, req); err == nil || written {
		t.Fatalf("Send to a closed port: written %v, %v", written, err)
	}
}
