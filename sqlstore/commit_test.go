package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/llmfleet/llmfleet"
)

// fakeInserts records the groups a committer inserts; each insert waits
// for release when hold is set.
type fakeInserts struct {
	mu     sync.Mutex
	groups [][]string
	stored map[string]bool
	hold   chan struct{} // nil: no wait
	fail   error         // the error of every insert, when set
}

func (f *fakeInserts) insert(ctx context.Context, rows []Row) ([]error, error) {
	f.mu.Lock()
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.Request.ID)
	}
	f.groups = append(f.groups, ids)
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, errCanceled
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	errs := make([]error, len(rows))
	for i, r := range rows {
		if f.stored[r.Request.ID] {
			errs[i] = llmfleet.ErrExists
		}
		f.stored[r.Request.ID] = true
	}
	return errs, nil
}

// errCanceled stands for the server's answer to a canceled insert.
var errCanceled = errors.New("canceled on the server")

func row(id string) Row { return Row{Request: &llmfleet.StoredRequest{ID: id}} }

func newFake() *fakeInserts { return &fakeInserts{stored: map[string]bool{}} }

func (f *fakeInserts) dialect() Dialect { return Dialect{Name: "fake", Insert: f.insert} }

// Calls waiting while a group is inserted go in the next group together;
// of two calls with one id in a group, the second finds it taken.
func TestCommitterGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.hold = make(chan struct{})
		g := startCommitter(f.dialect())
		defer g.stop()
		errs := make(chan error, 5)
		go func() { errs <- g.add(t.Context(), row("first")) }()
		synctest.Wait() // the first group is being inserted
		for _, id := range []string{"a", "b", "c", "b"} {
			go func() { errs <- g.add(t.Context(), row(id)) }()
		}
		synctest.Wait()
		close(f.hold)
		var exists int
		for range 5 {
			if err := <-errs; errors.Is(err, llmfleet.ErrExists) {
				exists++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if exists != 1 || len(f.groups) != 2 || len(f.groups[1]) != 4 {
			t.Errorf("groups %v, %d told the id was taken; want [first] then the 4 others, 1", f.groups, exists)
		}
	})
}

// A call whose context ends before its group is taken is not inserted,
// and is answered with its context's error.
func TestCommitterAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.hold = make(chan struct{})
		g := startCommitter(f.dialect())
		defer g.stop()
		first := make(chan error, 1)
		go func() { first <- g.add(t.Context(), row("first")) }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		gaveUp := make(chan error, 1)
		go func() { gaveUp <- g.add(ctx, row("gave-up")) }()
		synctest.Wait()
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Fatalf("the abandoned call: %v, want context.Canceled", err)
		}
		close(f.hold)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		g.stop()
		if f.stored["gave-up"] || len(f.groups) != 1 {
			t.Errorf("groups %v: the abandoned call was inserted", f.groups)
		}
	})
}

// With Canceled, a group's insert waiting on the server is canceled when
// the context of one of its calls ends: that call gets its context's
// error, its request not stored, and the others are inserted again.
func TestCommitterCanceledOnTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			groups  [][]string
			stored  = map[string]bool{}
			release = make(chan struct{})
		)
		insert := func(ctx context.Context, rows []Row) ([]error, error) {
			mu.Lock()
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.Request.ID)
			}
			groups = append(groups, ids)
			n := len(groups)
			mu.Unlock()
			switch n {
			case 1:
				<-release
			case 2: // waits on a lock held elsewhere, until canceled
				<-ctx.Done()
				return nil, errCanceled
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				stored[id] = true
			}
			return make([]error, len(rows)), nil
		}
		g := startCommitter(Dialect{Name: "fake", Insert: insert, Canceled: func(err error) bool { return errors.Is(err, errCanceled) }})
		defer g.stop()
		first := make(chan error, 1)
		go func() { first <- g.add(t.Context(), row("first")) }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		hurried, patient := make(chan error, 1), make(chan error, 1)
		go func() { hurried <- g.add(ctx, row("hurried")) }()
		go func() { patient <- g.add(t.Context(), row("patient")) }()
		synctest.Wait()
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the second group waits on the lock
		cancel()
		if err := <-hurried; !errors.Is(err, context.Canceled) {
			t.Errorf("the canceled call: %v, want context.Canceled", err)
		}
		if err := <-patient; err != nil {
			t.Errorf("the call whose context went on: %v", err)
		}
		if stored["hurried"] || !stored["patient"] || len(groups) != 3 || len(groups[1]) != 2 {
			t.Errorf("groups %v, stored %v; want [first] [hurried patient] [patient]", groups, stored)
		}
	})
}

// With Committed, an insert whose answer was lost is answered as stored.
func TestCommitterCommittedAnswerLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = errors.New("connection lost")
		d := f.dialect()
		d.Committed = func(rows []Row) []error { return make([]error, len(rows)) }
		g := startCommitter(d)
		defer g.stop()
		if err := g.add(t.Context(), row("lost")); err != nil {
			t.Fatalf("an insert that committed, its answer lost: %v", err)
		}
		d.Committed = func([]Row) []error { return nil }
		g2 := startCommitter(d)
		defer g2.stop()
		if err := g2.add(t.Context(), row("failed")); err == nil || !errors.Is(err, f.fail) {
			t.Fatalf("an insert that did not commit: %v, want its error", err)
		}
	})
}

// stop answers every call handed over; a call after it gets ErrClosed.
func TestCommitterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.hold = make(chan struct{})
		g := startCommitter(Dialect{Name: "fake", Insert: f.insert, Workers: 2, MaxGroup: 3})
		errs := make(chan error, 20)
		for i := range 20 {
			go func() { errs <- g.add(t.Context(), row(fmt.Sprint(i))) }()
		}
		synctest.Wait()
		close(f.hold)
		if !g.stop() || g.stop() {
			t.Error("stop: want true once, then false")
		}
		for range 20 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if len(f.stored) != 20 {
			t.Errorf("%d stored, want 20", len(f.stored))
		}
		for _, grp := range f.groups {
			if len(grp) > 3 {
				t.Errorf("a group of %d, want at most MaxGroup (3)", len(grp))
			}
		}
		if err := g.add(t.Context(), row("late")); !errors.Is(err, ErrClosed) {
			t.Errorf("add after stop: %v, want ErrClosed", err)
		}
	})
}

func TestNumber(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                            "SELECT 1",
		"WHERE a = ? AND b IN (?, ?) LIMIT ?": "WHERE a = $1 AND b IN ($2, $3) LIMIT $4",
	} {
		if got := number(in); got != want {
			t.Errorf("number(%q) = %q, want %q", in, got, want)
		}
	}
}
