package ledger

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// routeOrder is the order of the routes in the cache table; other routes
// follow, sorted.
var routeOrder = []string{"sync", "flex", "batch"}

// writeCacheLines writes the summary lines of the routing misses, the net
// saving, the cache hit rate, the rewrites and the estimated entries.
func writeCacheLines(b *strings.Builder, s Summary) {
	fmt.Fprintf(b, "Routing misses:   %s (cache writes of prefixes the other route's cache held)\n", usd(s.RoutingMissUSD))
	netPercent := 0.0
	if s.SyncEquivalentUSD > 0 {
		netPercent = 100 * s.NetSavedUSD / s.SyncEquivalentUSD
	}
	fmt.Fprintf(b, "Net saved:        %s (%.1f%%; saved less the routing misses of requests at the sync price)\n",
		usd(s.NetSavedUSD), netPercent)
	if n := s.Tokens.Cacheable(); n > 0 {
		fmt.Fprintf(b, "Cache hit rate:   %s of %s cacheable tokens read from the cache\n", percent(s.CacheHitRate), count(n))
	} else {
		b.WriteString("Cache hit rate:   – (no cacheable tokens)\n")
	}
	if len(s.Rewrites) > 0 {
		var n int64
		kinds := make([]string, 0, len(s.Rewrites))
		for _, k := range sortedKeys(s.Rewrites) {
			n += s.Rewrites[k]
			kinds = append(kinds, fmt.Sprintf("%s %s", k, count(s.Rewrites[k])))
		}
		fmt.Fprintf(b, "Rewritten:        %s %s sent with a body llmfleet changed (%s)\n",
			count(n), plural(n, "request", "requests"), strings.Join(kinds, ", "))
	}
	if s.Estimated > 0 {
		fmt.Fprintf(b, "Estimated:        %s %s whose usage llmfleet estimated (cut before the provider reported it)\n",
			count(s.Estimated), plural(s.Estimated, "request", "requests"))
	}
}

// writeCache writes the cache table: each route's cache figures with its
// models' under it, then the total with each model's over every route.
// A model with neither cacheable tokens nor routing misses gets no row.
// It writes nothing when no token was cacheable and no routing miss paid.
func writeCache(w io.Writer, s Summary) error {
	if s.Tokens.Cacheable() == 0 && s.RoutingMissUSD == 0 {
		return nil
	}
	routes := slices.DeleteFunc(slices.Clone(routeOrder), func(r string) bool { _, ok := s.ByRoute[r]; return !ok })
	for _, r := range sortedKeys(s.ByRoute) {
		if !slices.Contains(routeOrder, r) {
			routes = append(routes, r)
		}
	}
	width := len("CACHE")
	for _, m := range sortedKeys(s.ByModel) {
		width = max(width, len(modelLabel(m))+2)
	}
	for _, r := range routes {
		width = max(width, len(r))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, b Breakdown) {
		rate := "–"
		if b.Tokens.Cacheable() > 0 {
			rate = percent(b.CacheHitRate)
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t\n", width, label, count(b.Tokens.CacheRead),
			count(b.Tokens.CacheWrite5m), count(b.Tokens.CacheWrite1h), rate, usd(b.RoutingMissUSD))
	}
	fmt.Fprintf(tw, "%-*s\tREAD\tWRITE 5M\tWRITE 1H\tHIT RATE\tROUTING MISSES\t\n", width, "CACHE")
	models := func(byModel map[string]Breakdown) {
		for _, m := range sortedKeys(byModel) {
			if b := byModel[m]; b.Tokens.Cacheable() > 0 || b.RoutingMissUSD != 0 {
				row("  "+modelLabel(m), b)
			}
		}
	}
	for _, r := range routes {
		row(r, s.ByRoute[r])
		models(s.ByRouteModel[r])
	}
	row("TOTAL", Breakdown{Tokens: s.Tokens, CacheHitRate: s.CacheHitRate, RoutingMissUSD: s.RoutingMissUSD})
	models(s.ByModel)
	return tw.Flush()
}

// modelLabel returns the table label of a model.
func modelLabel(m string) string {
	if m == "" {
		return "(unknown)"
	}
	return m
}

// percent formats a share from 0 to 1 as a percentage.
func percent(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }
