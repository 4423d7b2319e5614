package claude

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// since is the Since of the FindBatch tests: batches created from
// since-DefaultReconcileSkew on are looked at.
var since = testNow.Add(-5 * time.Minute)

func find(p *Provider, tag string, size int, known ...string) (*llmfleet.Batch, error) {
	return p.FindBatch(context.Background(), testCred, llmfleet.BatchQuery{
		Tag: tag, Since: since, Size: size,
		Known: func(id string) bool { return slices.Contains(known, id) },
	})
}

// The batch is found by the tag in its first result, among ended batches
// of the same size, through several pages of batches of other sizes.
func TestFindBatchByTag(t *testing.T) {
	p, f, _ := newFake(t)
	a := f.ended("a", 3, since.Add(-time.Minute))
	mine := f.ended("mine", 3, since.Add(time.Minute))
	b := f.ended("b", 3, since.Add(2*time.Minute))
	for range findPageSize + 50 {
		f.add("other", 5, since.Add(3*time.Minute))
	}
	got, err := find(p, "mine", 3)
	if err != nil || got == nil || got.ID != mine.ID || got.Counts.Total() != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	if read := f.resultsRead(); !slices.Equal(read, slices.Sorted(slices.Values([]string{b.ID, mine.ID}))) {
		t.Errorf("results read of %v, want %s and %s only", read, b.ID, mine.ID)
	}
	if _, l := f.counts(); l != 2 {
		t.Errorf("%d lists", l)
	}
	// a, within the skew, is looked into as well.
	if got, err := find(p, "a", 3); err != nil || got == nil || got.ID != a.ID {
		t.Errorf("a: %+v %v", got, err)
	}
	// A tag that is a prefix of another's is not that tag.
	if got, err := find(p, "min", 3); got != nil || err != nil {
		t.Errorf("min: %+v %v", got, err)
	}
}

// While a batch of the same size is in progress, its tag cannot be read:
// it may be the one looked for.
func TestFindBatchUndetermined(t *testing.T) {
	p, f, _ := newFake(t)
	f.ended("a", 3, since)
	running := f.add("x", 3, since)
	got, err := find(p, "mine", 3)
	if !errors.Is(err, llmfleet.ErrUndetermined) || got != nil {
		t.Fatalf("%+v %v", got, err)
	}
	// An ended batch that carries the tag is found all the same.
	mine := f.ended("mine", 3, since)
	f.add("y", 3, since)
	if got, err := find(p, "mine", 3); err != nil || got == nil || got.ID != mine.ID {
		t.Errorf("%+v %v", got, err)
	}
	if slices.Contains(f.resultsRead(), running.ID) {
		t.Errorf("results of a running batch asked for")
	}
}

// A batch Known to carry another tag is not looked into.
func TestFindBatchKnown(t *testing.T) {
	p, f, _ := newFake(t)
	a := f.ended("a", 3, since)
	x := f.add("x", 3, since)
	got, err := find(p, "mine", 3, a.ID, x.ID)
	if got != nil || err != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if read := f.resultsRead(); len(read) != 0 {
		t.Errorf("results read of %v", read)
	}
}

// Batches of other sizes are not candidates, running or not.
func TestFindBatchOtherSizes(t *testing.T) {
	p, f, _ := newFake(t)
	f.add("x", 2, since)
	f.ended("y", 4, since)
	f.add("z", 4, since)
	got, err := find(p, "mine", 3)
	if got != nil || err != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if read := f.resultsRead(); len(read) != 0 {
		t.Errorf("results read of %v", read)
	}
}

// Batches created before Since, less the skew, are not candidates, and the
// list is read no further back.
func TestFindBatchNothingSince(t *testing.T) {
	p, f, _ := newFake(t)
	for range findPageSize + 50 {
		f.add("old", 3, since.Add(-time.Hour))
	}
	f.ended("mine", 3, since.Add(-time.Hour))
	got, err := find(p, "mine", 3)
	if got != nil || err != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if _, l := f.counts(); l != 1 {
		t.Errorf("%d lists", l)
	}
	// Within the skew, a running batch is a candidate.
	f.add("x", 3, since.Add(-DefaultReconcileSkew+time.Second))
	if _, err := find(p, "mine", 3); !errors.Is(err, llmfleet.ErrUndetermined) {
		t.Errorf("within the skew: %v", err)
	}
	// An empty list proves nothing was created.
	p, _, _ = newFake(t)
	if got, err := find(p, "mine", 3); got != nil || err != nil {
		t.Errorf("empty list: %+v %v", got, err)
	}
}

func TestFindBatchErrors(t *testing.T) {
	p, f, _ := newFake(t)
	f.OnList = func(w http.ResponseWriter) bool {
		writeError(w, 403, "permission_error", "no")
		return true
	}
	got, err := find(p, "mine", 3)
	var e *llmfleet.Error
	if got != nil || !errors.As(err, &e) || e.StatusCode != 403 {
		t.Errorf("list: %+v %v", got, err)
	}

	// An ended candidate whose results cannot be read.
	p, f, _ = newFake(t)
	f.ended("a", 3, since).Gone = true
	got, err = find(p, "mine", 3)
	if got != nil || !errors.As(err, &e) || e.StatusCode != 404 {
		t.Errorf("results: %+v %v", got, err)
	}
}
