package ledger

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable renders s for the terminal: the totals (the routing misses,
// the net saving and the cache hit rate among them), then what was paid,
// what it would have cost at the sync route and what was saved, by model
// by route and by client, and the prompt cache's figures by route and
// model. Models missing from the price table are flagged.
func WriteTable(w io.Writer, s Summary) error {
	var b strings.Builder
	if !s.From.IsZero() || !s.To.IsZero() {
		fmt.Fprintf(&b, "Period:           %s to %s\n", stamp(s.From, "the beginning"), stamp(s.To, "now"))
	}
	fmt.Fprintf(&b, "Calls:            %s sync, ", count(s.SyncCalls))
	if s.FlexCalls > 0 {
		fmt.Fprintf(&b, "%s flex, ", count(s.FlexCalls))
	}
	fmt.Fprintf(&b, "%s batched", count(s.BatchedCalls))
	if s.BatchesSubmitted > 0 {
		fmt.Fprintf(&b, " in %s %s", count(s.BatchesSubmitted), plural(s.BatchesSubmitted, "batch", "batches"))
	}
	fmt.Fprintf(&b, "; %s %s, %s budget %s\n", count(s.Errors), plural(s.Errors, "error", "errors"),
		count(s.BudgetMisses), plural(s.BudgetMisses, "miss", "misses"))
	fmt.Fprintf(&b, "Paid:             %s\n", usd(s.CostUSD))
	fmt.Fprintf(&b, "Would have paid:  %s (every request at the sync route)\n", usd(s.SyncEquivalentUSD))
	fmt.Fprintf(&b, "Saved:            %s (%.1f%%)\n", usd(s.SavedUSD), s.SavedPercent)
	writeCacheLines(&b, s)
	if s.UnpricedRequests > 0 {
		fmt.Fprintf(&b, "Unpriced:         %s %s of models missing from the price table (%s tokens), not included above\n",
			count(s.UnpricedRequests), plural(s.UnpricedRequests, "request", "requests"), count(s.UnpricedTokens.Total()))
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	total := Breakdown{
		Calls: s.SyncCalls + s.FlexCalls + s.BatchedCalls, Tokens: s.Tokens, CostUSD: s.CostUSD,
		SyncEquivalentUSD: s.SyncEquivalentUSD, SavedUSD: s.SavedUSD, UnpricedRequests: s.UnpricedRequests,
	}
	if err := writeBreakdowns(w, "MODEL", s.ByModel, total); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	if err := writeBreakdowns(w, "ROUTE", s.ByRoute, total); err != nil {
		return err
	}
	if len(s.ByClient) > 0 {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := writeBreakdowns(w, "CLIENT", s.ByClient, total); err != nil {
			return err
		}
	}
	if err := writeClientLimits(w, s.Clients); err != nil {
		return err
	}
	var cache strings.Builder
	if err := writeCache(&cache, s); err != nil {
		return err
	}
	if cache.Len() > 0 {
		if _, err := io.WriteString(w, "\n"+cache.String()); err != nil {
			return err
		}
	}
	if s.UnpricedRequests > 0 {
		_, err := io.WriteString(w, "\n* requests of models missing from the price table: their tokens are counted, their cost is unknown (?)\n")
		return err
	}
	return nil
}

// writeBreakdowns writes one aligned table of breakdowns and a total row.
func writeBreakdowns(w io.Writer, title string, rows map[string]Breakdown, total Breakdown) error {
	keys := sortedKeys(rows)
	width := len(title)
	for _, k := range keys {
		width = max(width, len(k)+2)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	name := func(s string) string { return fmt.Sprintf("%-*s", width, s) }
	fmt.Fprintf(tw, "%s\tCALLS\tINPUT\tOUTPUT\tCACHE WRITE\tCACHE READ\tPAID\tWOULD-HAVE-PAID\tSAVED\t\n", name(title))
	row := func(label string, r Breakdown) {
		paid, would, saved := usd(r.CostUSD), usd(r.SyncEquivalentUSD), usd(r.SyncEquivalentUSD-r.CostUSD)
		if r.UnpricedRequests > 0 {
			label += " *"
			if r.UnpricedRequests == r.Calls {
				paid, would, saved = "?", "?", "?"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name(label), count(r.Calls),
			count(r.Tokens.Input), count(r.Tokens.Output), count(r.Tokens.CacheWrite5m+r.Tokens.CacheWrite1h),
			count(r.Tokens.CacheRead), paid, would, saved)
	}
	for _, k := range keys {
		label := k
		if label == "" {
			label = "(unknown)"
		}
		row(label, rows[k])
	}
	row("TOTAL", total)
	return tw.Flush()
}

// usd formats dollars with four decimals, so that fractions of a cent of
// small workloads show.
func usd(v float64) string {
	if math.Abs(v) < 0.00005 {
		v = 0 // no "-$0.0000" from rounding noise
	}
	if v < 0 {
		return "-" + usd(-v)
	}
	return "$" + group(strconv.FormatFloat(v, 'f', 4, 64))
}

// count formats an integer with thousands separators.
func count(n int64) string { return group(strconv.FormatInt(n, 10)) }

// group puts commas between the thousands of the integer part of a
// non-negative decimal number.
func group(s string) string {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func stamp(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.Format("2006-01-02 15:04:05 MST")
}
