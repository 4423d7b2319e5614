package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Period is the span [From, To) of the ledger a summary covers. A zero
// From means from the beginning of the ledger.
type Period struct {
	From, To time.Time
}

// ParsePeriod returns the period that the stats options ask for: the last
// since before now (a duration such as 90m or 24h, or days such as 7d;
// "0" means from the beginning), or from and to as RFC 3339 times; to
// defaults to now, and since and from exclude each other. Both
// "llmfleet stats" and GET /llmfleet/v1/stats take these options; the
// error names the option at fault.
func ParsePeriod(since, from, to string, now time.Time) (Period, error) {
	p := Period{To: now}
	if to != "" {
		t, err := time.Parse(time.RFC3339, to)
		if err != nil {
			return p, fmt.Errorf("to: %q is not an RFC 3339 time", to)
		}
		p.To = t
	}
	switch {
	case since != "" && from != "":
		return p, errors.New("give since or from, not both")
	case from != "":
		t, err := time.Parse(time.RFC3339, from)
		if err != nil {
			return p, fmt.Errorf("from: %q is not an RFC 3339 time", from)
		}
		p.From = t
	case since != "":
		d, err := parseSince(since)
		if err != nil {
			return p, err
		}
		if d > 0 {
			p.From = p.To.Add(-d)
		}
	}
	if !p.From.IsZero() && !p.To.After(p.From) {
		return p, errors.New("the period ends before it starts")
	}
	return p, nil
}

// parseSince parses a non-negative duration, with days ("7d") allowed.
func parseSince(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 && days < 100000 {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("since: %q is not a duration such as 90m, 24h or 7d", s)
	}
	return d, nil
}

// Reader reads the ledger entries whose Time is in [from, to). A
// llmfleet.Store is one.
type Reader interface {
	Ledger(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error)
}

// SummarizePeriod reads the entries of p from r and summarizes them.
func SummarizePeriod(ctx context.Context, r Reader, p Period) (Summary, error) {
	from := p.From
	if from.IsZero() {
		// The beginning: stores keep times since the Unix epoch.
		from = time.Unix(0, 0)
	}
	entries, err := r.Ledger(ctx, from, p.To)
	if err != nil {
		return Summary{}, err
	}
	return Summarize(entries, p.From, p.To), nil
}
