package main

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

// billModel is the model of the requests whose bill a test checks: one
// the price table knows, so that the ledger's costs are not zero.
const billModel = "claude-sonnet-4-6"

// billReport compares what the emulator billed with what the ledger
// recorded, prompt by prompt: the money truth of a fault test.
type billReport struct {
	prompts                int      // prompts sent
	billed                 int      // answers the emulator billed
	ledgered               int      // ledger entries of those prompts, errors aside
	late                   int      // of which recorded late (a rescue and a batch both paid)
	billedUSD, ledgeredUSD float64  // priced by the embedded table
	twice                  []string // prompts paid more often than the ledger tells
	unledgered             []string // prompts billed and missing from the ledger
}

// checkBill builds the report of prompts (text by the request id of its
// ticket) from the emulator's stats and the ledger's entries.
func checkBill(t *testing.T, st emulator.Stats, entries []llmfleet.LedgerEntry, promptOf map[string]string) billReport {
	t.Helper()
	prices := pricing.Default()
	wanted := map[string]bool{}
	for _, p := range promptOf {
		wanted[p] = true
	}
	r := billReport{prompts: len(wanted)}
	bills := map[string]int{}
	for _, b := range st.Bills {
		if !wanted[b.Text] {
			continue
		}
		bills[b.Text]++
		r.billed++
		route := llmfleet.RouteSync
		if b.Batch {
			route = llmfleet.RouteBatch
		}
		usd, _ := prices.Cost("anthropic", b.Model, b.Usage, route)
		r.billedUSD += usd
	}
	ledgered, late := map[string]int{}, map[string]int{}
	for _, e := range entries {
		p, ok := promptOf[e.RequestID]
		if !ok || e.Outcome != "ok" {
			continue
		}
		ledgered[p]++
		r.ledgered++
		r.ledgeredUSD += e.CostUSD
		if e.Rescue == llmfleet.RescueLate {
			late[p]++
			r.late++
		}
	}
	for p := range wanted {
		switch n := bills[p]; {
		case n > 1+late[p]:
			r.twice = append(r.twice, fmt.Sprintf("%q billed %d, %d late", p, n, late[p]))
		case n > ledgered[p]:
			r.unledgered = append(r.unledgered, fmt.Sprintf("%q billed %d, ledgered %d", p, n, ledgered[p]))
		}
	}
	slices.Sort(r.twice)
	slices.Sort(r.unledgered)
	return r
}

// require fails the test unless no prompt was paid twice beyond the
// rescues the ledger records as late, none is missing from the ledger,
// and the ledger's cost is within 1% of the bill.
func (r billReport) require(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: prompts %d, billed %d ($%.6f), ledgered %d ($%.6f), late %d, paid twice beyond late %d, unledgered %d",
		what, r.prompts, r.billed, r.billedUSD, r.ledgered, r.ledgeredUSD, r.late, len(r.twice), len(r.unledgered))
	if len(r.twice) > 0 {
		t.Errorf("%s: prompts paid twice beyond the rescues recorded late: %v", what, r.twice)
	}
	if len(r.unledgered) > 0 {
		t.Errorf("%s: prompts billed and not in the ledger: %v", what, r.unledgered)
	}
	if r.billedUSD == 0 || math.Abs(r.ledgeredUSD-r.billedUSD) > 0.01*r.billedUSD {
		t.Errorf("%s: the ledger says $%.6f, the emulator billed $%.6f (want within 1%%)", what, r.ledgeredUSD, r.billedUSD)
	}
}

// submitBudgeted sends one async request per prompt, of billModel, with
// a latency budget of ms milliseconds, and returns their ids.
func (c *crashClient) submitBudgeted(base string, prompts []string, ms int) []string {
	c.t.Helper()
	var ids []string
	for _, p := range prompts {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":64,"messages":[{"role":"user","content":%q}]}`, billModel, p)
		status, h, b := c.do("POST", base+"/v1/messages", body, "Prefer", "respond-async",
			"llmfleet-latency-budget-ms", fmt.Sprint(ms))
		if status != http.StatusAccepted {
			c.t.Fatalf("async %s: %d %s", p, status, b)
		}
		ids = append(ids, h.Get("llmfleet-request-id"))
	}
	return ids
}

// resolveAny polls every ticket until it is answered and checks that each
// got the answer to its own prompt, whatever the route that answered it
// (a batch, or a rescue).
func (c *crashClient) resolveAny(base string, ids, prompts []string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for i, id := range ids {
		for {
			code, _, b := c.do("GET", base+proxy.RequestsPath+id, "")
			if code == http.StatusAccepted && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if code != http.StatusOK || answerText(string(b)) != "Answer to: "+prompts[i] {
				c.t.Fatalf("ticket %s of %q: %d %s", id, prompts[i], code, b)
			}
			break
		}
	}
}
