package observe

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []int
		l := NewLane(3, func(x int) { mu.Lock(); got = append(got, x); mu.Unlock() })
		l.Add(1)
		l.Add(2)
		mu.Lock()
		if len(got) != 0 {
			t.Errorf("ran %v at once; want it queued", got)
		}
		mu.Unlock()
		time.Sleep(LaneDelay)
		synctest.Wait()
		mu.Lock()
		if !slices.Equal(got, []int{1, 2}) {
			t.Errorf("after LaneDelay ran %v, want [1 2]", got)
		}
		mu.Unlock()
		// A full backlog is run by the Add that fills it, in order.
		l.Add(3)
		l.Add(4)
		l.Add(5)
		mu.Lock()
		if !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
			t.Errorf("a full backlog: ran %v, want [1 2 3 4 5]", got)
		}
		mu.Unlock()
		l.Add(6)
		l.Settle()
		mu.Lock()
		if !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) {
			t.Errorf("after Settle ran %v", got)
		}
		mu.Unlock()
		if err := l.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLaneCloseRunsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int
		l := NewLane(100, func(x int) { got = append(got, x) })
		l.Add(1)
		l.Add(2)
		if err := l.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []int{1, 2}) {
			t.Errorf("Close ran %v, want [1 2]", got)
		}
		l.Add(3) // after Close: at once
		if !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("Add after Close: ran %v, want [1 2 3]", got)
		}
	})
}

func TestLaneCloseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		l := NewLane(100, func(int) { <-release })
		l.Add(1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := l.Close(ctx); err != context.DeadlineExceeded {
			t.Errorf("Close with a stuck item = %v, want the deadline", err)
		}
		close(release)
		synctest.Wait()
	})
}

// TestLaneReusesQueue: a lane settled over and over runs every item once,
// in order, and queues into the array of a queue it ran rather than a new
// one.
func TestLaneReusesQueue(t *testing.T) {
	var got []int
	l := NewLane(1<<20, func(x int) { got = append(got, x) })
	next := 0
	round := func() {
		for range 100 {
			l.Add(next)
			next++
		}
		l.Settle()
	}
	round()
	round() // the first round's array is the spare from here on
	got = make([]int, 0, 1000)
	allocs := testing.AllocsPerRun(5, round)
	l.Close(context.Background())
	if allocs != 0 {
		t.Errorf("a settled round allocated %v times, want 0 (the queue's array reused)", allocs)
	}
	want := make([]int, 0, 600)
	for i := 200; i < next; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}
