package simulate

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Timers fire in time order (ties in the order they were set), a stopped
// one never, and Run returns when nothing is left, having taken no wall
// time for the virtual hours.
func TestClockTimers(t *testing.T) {
	c := NewClock(start)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(start).String()) }
	}
	c.AfterFunc(2*time.Hour, at("b"))
	c.AfterFunc(time.Hour, at("a"))
	c.afterKeyed(time.Hour, 2, at("k2"))
	c.afterKeyed(time.Hour, 1, at("k1"))
	c.AfterFunc(time.Hour, at("a2"))
	stopped := c.AfterFunc(90*time.Minute, at("stopped"))
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop: want true then false")
	}
	wall := time.Now()
	c.Run()
	want := []string{"a@1h0m0s", "a2@1h0m0s", "k1@1h0m0s", "k2@1h0m0s", "b@2h0m0s"}
	if !slices.Equal(got, want) {
		t.Errorf("fired %v, want %v", got, want)
	}
	if time.Since(wall) > 5*time.Second {
		t.Errorf("Run took %s", time.Since(wall))
	}
}

// Tasks run one at a time, in the order they were started; a sleeping
// task lets the next run, and time moves only when none runs.
func TestClockTasks(t *testing.T) {
	c := NewClock(start)
	var log []string
	running := 0
	task := func(name string, sleep time.Duration) func() {
		return func() {
			running++
			if running != 1 {
				t.Errorf("%s: %d tasks running", name, running)
			}
			log = append(log, name+" starts @"+c.Now().Sub(start).String())
			running--
			if err := c.Sleep(context.Background(), sleep); err != nil {
				t.Error(err)
			}
			running++
			log = append(log, name+" wakes @"+c.Now().Sub(start).String())
			running--
		}
	}
	c.AfterFunc(time.Minute, func() {
		c.Go(task("x", 10*time.Second))
		c.Go(task("y", 5*time.Second))
	})
	c.Run()
	want := []string{"x starts @1m0s", "y starts @1m0s", "y wakes @1m5s", "x wakes @1m10s"}
	if !slices.Equal(log, want) {
		t.Errorf("log %v, want %v", log, want)
	}
}

// A sleep ends early when its context ends.
func TestClockSleepCanceled(t *testing.T) {
	c := NewClock(start)
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	var woke time.Time
	c.Go(func() {
		err = c.Sleep(ctx, time.Hour)
		woke = c.Now()
	})
	c.AfterFunc(time.Minute, cancel)
	c.Run()
	if !errors.Is(err, context.Canceled) || woke.Sub(start) > time.Minute {
		t.Errorf("Sleep: %v, woke at %s", err, woke.Sub(start))
	}
}
