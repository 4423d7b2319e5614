package simrun

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/llmfleet/llmfleet/simulate"
)

// WriteTable prints the reports as tables: routes, costs and savings,
// then latencies by budget.
func WriteTable(w io.Writer, reports []simulate.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\trequests\tsync\tflex\tbatch\tbatches\tmgmt calls\tcost\tsync equivalent\tsaved\tbound\t% of bound\trescued\tflex fallbacks\tbudget misses\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t$%.2f\t$%.2f\t$%.2f\t$%.2f\t%.1f%%\t%d\t%d\t%d\t\n", r.Policy, r.Requests, r.Routes["sync"], r.Routes["flex"], r.Routes["batch"],
			r.Batches, r.ManagementCalls, r.CostUSD, r.SyncEquivalentUSD, r.SavedUSD, r.BoundSavedUSD, 100*r.SavedOfBound, r.Rescued, r.FlexFallbacks, r.BudgetMisses)
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "latency p50 / p99 by budget\t≤5s\t≤1m\t≤10m\t>10m\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s", r.Policy)
		for _, c := range []string{"le_5s", "le_1m", "le_10m", "gt_10m"} {
			p, ok := r.Latency[c]
			if !ok {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%s / %s", ms(p.P50), ms(p.P99))
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}

// ms formats milliseconds to the second past a minute, else to the
// tenth of a second.
func ms(v int64) string {
	d := time.Duration(v) * time.Millisecond
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// WriteCacheComparison prints the reports of a comparison (Compare) as a
// table: per policy, its cost, its saving against all-sync and its share
// of the best router's, its routes, its cache hit rates by route, its
// rescues and its broken budgets.
func WriteCacheComparison(w io.Writer, base simulate.Config, reports []simulate.Report) error {
	c := base.Cache
	fmt.Fprintf(w, "prompt cache: sync hit rate %g, batch hit rate %g, cross rate %g; seed %d\n\n", c.SyncHitRate, c.BatchHitRate, c.CrossRate, base.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\trequests\tsync\tflex\tbatch\tcost\tsaved vs all-sync\t% of best\tsync cache hits\tbatch cache hits\trescued\tbudget misses\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%.0f%%\t%s\t%s\t%d\t%d\t\n", r.Policy, r.Requests, r.Routes["sync"], r.Routes["flex"], r.Routes["batch"],
			dollars(r.CostUSD), dollars(r.SavedUSD), 100*r.SavedOfBound, hitRate(r.Cache, "sync", "flex"), hitRate(r.Cache, "batch"), r.Rescued, r.BudgetMisses)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\ncache hits: the share of the cached prefixes' tokens read rather than written (the best router's: expected)")
	return err
}

// hitRate formats the cache hit rate of the routes together ("-" when
// none cached anything).
func hitRate(cache map[string]simulate.CacheStats, routes ...string) string {
	var read, written int64
	for _, r := range routes {
		read += cache[r].ReadTokens
		written += cache[r].WriteTokens
	}
	if read+written == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(read)/float64(read+written))
}

// dollars formats USD to the cent, the sign first.
func dollars(v float64) string {
	if v < 0 {
		return fmt.Sprintf("-$%.2f", -v)
	}
	return fmt.Sprintf("$%.2f", v)
}
