package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// What each client paid is kept by UTC day in client_spend (client, day:
// the day's number since the Unix epoch, usd), added to in the
// transaction that adds the ledger entries, so that a spend limit reads a
// month as a few rows however many calls it held (llmfleet.SpendStore).

// dayNanos is the length of a UTC day in nanoseconds.
const dayNanos = int64(24 * time.Hour)

// addSpend is the upsert adding a client's spend of one day.
const addSpend = `INSERT INTO client_spend (client, day, usd) VALUES (?, ?, ?)
	ON CONFLICT (client, day) DO UPDATE SET usd = client_spend.usd + excluded.usd`

// spendKey is a client's day in client_spend.
type spendKey struct {
	client string
	day    int64
}

// dayOf returns the number of t's UTC day since the Unix epoch.
func dayOf(t time.Time) int64 {
	n := t.UnixNano()
	d := n / dayNanos
	if n < 0 && n%dayNanos != 0 {
		d-- // a floor, for times before 1970
	}
	return d
}

// addSpend adds, within tx, what the entries naming a client cost to
// their clients' days, in the order of client and day (so that two
// processes adding to the same days lock them in the same order).
func (s Store) addSpend(ctx context.Context, tx *sql.Tx, entries []llmfleet.LedgerEntry) error {
	sums := map[spendKey]float64{}
	for i := range entries {
		e := &entries[i]
		if e.Client == "" || e.CostUSD == 0 {
			continue
		}
		sums[spendKey{e.Client, dayOf(e.Time)}] += e.CostUSD
	}
	if len(sums) == 0 {
		return nil
	}
	keys := make([]spendKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b spendKey) int {
		return cmp.Or(cmp.Compare(a.client, b.client), cmp.Compare(a.day, b.day))
	})
	q := s.c.sql(addSpend)
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, q, k.client, k.day, sums[k]); err != nil {
			return s.c.errorf("client spend: %w", err)
		}
	}
	return nil
}

// ClientSpend returns what each client paid on each UTC day that [from,
// to) touches, by client (byte order), then day.
func (s Store) ClientSpend(ctx context.Context, from, to time.Time) ([]llmfleet.ClientSpend, error) {
	db, err := s.c.Reader()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, s.c.sql(`SELECT client, day, usd FROM client_spend
		WHERE day >= ? AND day < ? AND usd <> 0 ORDER BY `+s.c.byteOrder("client")+`, day`), dayOf(from), dayOf(to.Add(-time.Nanosecond))+1)
	if err != nil {
		return nil, s.c.errorf("client spend: %w", err)
	}
	defer rows.Close()
	var out []llmfleet.ClientSpend
	for rows.Next() {
		var cs llmfleet.ClientSpend
		var day int64
		if err := rows.Scan(&cs.Client, &day, &cs.USD); err != nil {
			return nil, err
		}
		cs.Day = time.Unix(0, day*dayNanos).UTC()
		out = append(out, cs)
	}
	return out, rows.Err()
}

// The SQL stores keep what clients paid.
var _ llmfleet.SpendStore = Store{}
