package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestWriteTable(t *testing.T) {
	s := Summarize(workload(), t0, t0.Add(time.Hour))
	s.BatchesSubmitted = 2
	var b strings.Builder
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"Period:           2026-11-01 12:00:00 UTC to 2026-11-01 13:00:00 UTC",
		"Calls:            3 sync, 3 batched in 2 batches; 1 error, 2 budget misses",
		"Paid:             $0.1592",
		"Would have paid:  $0.3027 (every request at the sync route)",
		"Saved:            $0.1435 (47.4%)",
		"Unpriced:         1 request of models missing from the price table (550 tokens)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q", want)
		}
	}
	rows := tableRows(out)
	for name, want := range map[string]string{
		"MODEL/MODEL":     "MODEL CALLS INPUT OUTPUT CACHE WRITE CACHE READ PAID WOULD-HAVE-PAID SAVED",
		"MODEL/haiku":     "haiku 2 100,010 20,010 4,000 1,000 $0.1052 $0.2052 $0.1000",
		"MODEL/sonnet":    "sonnet 3 3,000 1,500 10,000 20,000 $0.0540 $0.0975 $0.0435",
		"MODEL/mystery-1": "mystery-1 * 1 500 50 0 0 ? ? ?",
		"ROUTE/batch":     "batch 3 102,000 21,000 10,000 20,000 $0.1435 $0.2870 $0.1435",
		"ROUTE/sync":      "sync * 3 1,510 560 4,000 1,000 $0.0157 $0.0157 $0.0000",
		"ROUTE/TOTAL":     "TOTAL * 6 103,510 21,560 14,000 21,000 $0.1592 $0.3027 $0.1435",
		"CACHE/CACHE":     "CACHE READ WRITE 5M WRITE 1H HIT RATE ROUTING MISSES",
		"CACHE/sync":      "sync 1,000 4,000 0 20.0% $0.0000",
		"CACHE/batch":     "batch 20,000 0 10,000 66.7% $0.0000",
		"CACHE/TOTAL":     "TOTAL 21,000 4,000 10,000 60.0% $0.0000",
	} {
		if got := rows[name]; got != want {
			t.Errorf("row %s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// tableRows returns the rows of WriteTable's tables by section and label:
// "MODEL/haiku" is the haiku row of the table headed MODEL, and a row
// indented under another is named after it too ("CACHE/sync/haiku").
// Each row is its cells joined by single spaces.
func tableRows(out string) map[string]string {
	rows := map[string]string{}
	for _, section := range strings.Split(out, "\n\n") {
		lines := strings.Split(strings.Trim(section, "\n"), "\n")
		head := strings.Fields(lines[0])
		if len(head) == 0 || strings.HasSuffix(head[0], ":") {
			continue // the summary lines
		}
		indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
		base, group := indent(lines[0]), ""
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			name := head[0] + "/" + f[0]
			if indent(l) > base && group != "" {
				name = group + "/" + f[0]
			} else {
				group = name
			}
			rows[name] = strings.Join(f, " ")
		}
	}
	return rows
}

func TestGroup(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "1234567.5000": "1,234,567.5000", "-12345": "-12,345"} {
		if got := group(in); got != want {
			t.Errorf("group(%s) = %s, want %s", in, got, want)
		}
	}
	if got := usd(-0.00001); got != "$0.0000" {
		t.Errorf("usd of rounding noise = %s", got)
	}
}

// The routing misses, the net saving, the hit rates by route and model,
// the rewrites and the estimated entries are in the table.
func TestWriteTableCache(t *testing.T) {
	rewritten := cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 4000, 0.05, 0.1, 0.003)
	rewritten.Rewrite = llmfleet.RewriteTTL1h
	estimated := cacheEntry(llmfleet.RouteSync, "haiku", 0, 0, 0, 0.01, 0.005, 0)
	estimated.Estimated = true
	s := Summarize([]llmfleet.LedgerEntry{
		cacheEntry(llmfleet.RouteSync, "sonnet", 3000, 1000, 0, 0.01, 0.005, 0.002),
		rewritten,
		cacheEntry(llmfleet.RouteFlex, "haiku", 1000, 0, 0, 0.01, 0.02, 0),
		estimated,
	}, time.Time{}, time.Time{})
	var b strings.Builder
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"Saved:            $0.0600 (42.9%)",
		"Routing misses:   $0.0050 (cache writes of prefixes the other route's cache held)",
		"Net saved:        $0.0580 (41.4%; saved less the routing misses of requests at the sync price)",
		"Cache hit rate:   44.4% of 9,000 cacheable tokens read from the cache",
		"Rewritten:        1 request sent with a body llmfleet changed (cache_ttl_1h 1)",
		"Estimated:        1 request whose usage llmfleet estimated (cut before the provider reported it)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q", want)
		}
	}
	rows := tableRows(out)
	for name, want := range map[string]string{
		"CACHE/sync":         "sync 3,000 1,000 0 75.0% $0.0020",
		"CACHE/sync/sonnet":  "sonnet 3,000 1,000 0 75.0% $0.0020",
		"CACHE/flex":         "flex 1,000 0 0 100.0% $0.0000",
		"CACHE/flex/haiku":   "haiku 1,000 0 0 100.0% $0.0000",
		"CACHE/batch":        "batch 0 0 4,000 0.0% $0.0030",
		"CACHE/batch/sonnet": "sonnet 0 0 4,000 0.0% $0.0030",
		"CACHE/TOTAL":        "TOTAL 4,000 1,000 4,000 44.4% $0.0050",
		"CACHE/TOTAL/haiku":  "haiku 1,000 0 0 100.0% $0.0000",
		"CACHE/TOTAL/sonnet": "sonnet 3,000 1,000 4,000 37.5% $0.0050",
		"CACHE/sync/haiku":   "", // the estimated call cached nothing: no row
	} {
		if got := rows[name]; got != want {
			t.Errorf("row %s:\n got %s\nwant %s", name, got, want)
		}
	}
	// The routes come in their order: sync, flex, batch.
	cache := out[strings.Index(out, "\n  CACHE "):]
	if i, j, k := strings.Index(cache, "\n  sync "), strings.Index(cache, "\n  flex "), strings.Index(cache, "\n  batch "); !(i < j && j < k) {
		t.Errorf("routes out of order: %d %d %d", i, j, k)
	}

	// Without cache traffic: no cache table, the hit rate says so.
	b.Reset()
	if err := WriteTable(&b, Summarize([]llmfleet.LedgerEntry{estimated}, time.Time{}, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "\n  CACHE ") || !strings.Contains(out, "Cache hit rate:   – (no cacheable tokens)") ||
		strings.Contains(out, "Rewritten:") {
		t.Errorf("no cache traffic:\n%s", out)
	}
}
