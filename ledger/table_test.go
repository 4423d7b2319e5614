package ledger

import (
	"strings"
	"testing"
	"time"
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
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			rows[f[0]] = f
		}
	}
	for name, want := range map[string]string{
		"MODEL":     "MODEL CALLS INPUT OUTPUT CACHE WRITE CACHE READ PAID WOULD-HAVE-PAID SAVED",
		"haiku":     "haiku 2 100,010 20,010 4,000 1,000 $0.1052 $0.2052 $0.1000",
		"sonnet":    "sonnet 3 3,000 1,500 10,000 20,000 $0.0540 $0.0975 $0.0435",
		"mystery-1": "mystery-1 * 1 500 50 0 0 ? ? ?",
		"batch":     "batch 3 102,000 21,000 10,000 20,000 $0.1435 $0.2870 $0.1435",
		"sync":      "sync * 3 1,510 560 4,000 1,000 $0.0157 $0.0157 $0.0000",
		"TOTAL":     "TOTAL * 6 103,510 21,560 14,000 21,000 $0.1592 $0.3027 $0.1435",
	} {
		if got := strings.Join(rows[name], " "); got != want {
			t.Errorf("row %s:\n got %s\nwant %s", name, got, want)
		}
	}
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
