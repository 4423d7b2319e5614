package observe

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet/ledger"
)

// The periods of GET /llmfleet/v1/stats?period=, as the JSON's "period"
// names them: the last hour, day, week or 30 days, or the whole ledger.
// Without a store there is no ledger: the stats are the counts since the
// process started (periodSinceStart); a period given as since, from or to
// is periodCustom.
const (
	periodAll        = "all"
	periodSinceStart = "since_start"
	periodCustom     = "custom"
)

// periodNames lists the values ?period= takes, shortest first; the
// dashboard's period picker offers the same.
const periodNames = "1h, 24h, 7d, 30d or all"

// periodLength returns how far back a named period reaches (0 for all).
func periodLength(name string) (time.Duration, bool) {
	switch name {
	case "1h":
		return time.Hour, true
	case "24h":
		return 24 * time.Hour, true
	case "7d":
		return 7 * 24 * time.Hour, true
	case "30d":
		return 30 * 24 * time.Hour, true
	case periodAll:
		return 0, true
	}
	return 0, false
}

// statsError is a refusal of a stats request, in the Anthropic envelope.
type statsError struct {
	status   int
	typ, msg string
}

// statsOf returns the summary a stats request asks for and the name of
// its period: ?period= (1h, 24h, 7d, 30d, all), else ?since= or
// ?from=&to=, else the whole ledger of the store (without a store, the
// counts since the process started). The whole ledger is read a little
// at a time (fleetTotals): a page polling it reads only what is new.
func (p *Pipeline) statsOf(r *http.Request) (ledger.Summary, string, *statsError) {
	q := r.URL.Query()
	name := q.Get("period")
	custom := q.Get("since") != "" || q.Get("from") != "" || q.Get("to") != ""
	switch {
	case name != "" && custom:
		return ledger.Summary{}, "", &statsError{http.StatusBadRequest, "invalid_request_error", "give period, or since, from and to, not both"}
	case name == "" && !custom && p.cfg.Store == nil:
		return p.Summary(), periodSinceStart, nil
	case name == "" && !custom:
		name = periodAll
	}
	var period ledger.Period
	if custom {
		var err error
		if period, err = ledger.ParsePeriod(q.Get("since"), q.Get("from"), q.Get("to"), p.clock.Now()); err != nil {
			return ledger.Summary{}, "", &statsError{http.StatusBadRequest, "invalid_request_error", err.Error()}
		}
		name = periodCustom
		if _, ok := periodLength(q.Get("since")); ok && q.Get("to") == "" {
			name = q.Get("since")
		}
	} else {
		back, ok := periodLength(name)
		if !ok {
			return ledger.Summary{}, "", &statsError{http.StatusBadRequest, "invalid_request_error",
				"period: " + strconv.Quote(name) + " is not a period; give " + periodNames}
		}
		period.To = p.clock.Now()
		if back > 0 {
			period.From = period.To.Add(-back)
		}
	}
	if p.cfg.Store == nil {
		return ledger.Summary{}, "", &statsError{http.StatusNotFound, "not_found_error", "llmfleet keeps no ledger to read a period from"}
	}
	s, err := p.readPeriod(r.Context(), name, period)
	if err != nil {
		return ledger.Summary{}, "", &statsError{http.StatusInternalServerError, "api_error", "reading the ledger: " + err.Error()}
	}
	return s, name, nil
}

// readPeriod reads the summary of a period from the store, once the
// entries observed so far are written: the whole ledger through the
// totals kept of it, any other period afresh.
func (p *Pipeline) readPeriod(ctx context.Context, name string, period ledger.Period) (ledger.Summary, error) {
	if err := p.writer.Flush(ctx); err != nil {
		return ledger.Summary{}, err
	}
	if name == periodAll {
		return p.fleet.summary(ctx, p.cfg.Store, time.Time{}, period.To)
	}
	return ledger.SummarizePeriod(ctx, p.cfg.Store, period)
}

// withPeriod returns the JSON object body with "period" first.
func withPeriod(body []byte, name string) []byte {
	out := make([]byte, 0, len(body)+len(name)+16)
	out = append(out, `{"period":`...)
	out = strconv.AppendQuote(out, name)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...)
}
