package ledger

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeClientLimits writes the table of the clients with limits: what
// each paid this UTC day and month against its limits.
func writeClientLimits(w io.Writer, clients []ClientStatus) error {
	if len(clients) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CLIENT\tTODAY (UTC)\tDAILY LIMIT\tTHIS MONTH\tMONTHLY LIMIT\tOVER LIMIT\tZDR\tSTATE\t")
	for _, c := range clients {
		state := "within limits"
		if c.Limit != "" {
			state = c.Limit + " reached until " + c.ResetsAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		zdr := "no"
		if c.ZDR {
			zdr = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Client, usd(c.TodayUSD), limitUSD(c.DailyUSD),
			usd(c.MonthUSD), limitUSD(c.MonthlyUSD), c.OverLimit, zdr, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// limitUSD writes a limit: none for 0.
func limitUSD(v float64) string {
	if v <= 0 {
		return "none"
	}
	return usd(v)
}
