package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/llmfleet/llmfleet"
)

// spendVersion is the migration that makes client_spend, whose Go step
// (sumBlockSpend) sums the entries of the ledger blocks into it.
const spendVersion = 12

// sumBlockSpend adds, within tx, what the entries of every ledger block
// cost to their clients' days in client_spend (migration 0012 sums the
// ledger table's in SQL).
func sumBlockSpend(ctx context.Context, tx *sql.Tx) error {
	type key struct {
		client string
		day    int64
	}
	sums := map[key]float64{}
	rows, err := tx.QueryContext(ctx, `SELECT data FROM ledger_blocks`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return err
		}
		err := decodeBlock(data, func(e llmfleet.LedgerEntry) {
			if e.Client != "" && e.CostUSD != 0 {
				sums[key{e.Client, llmfleet.UTCDay(e.Time).UnixNano() / int64(24*time.Hour)}] += e.CostUSD
			}
		})
		if err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	for k, usd := range sums {
		if _, err := tx.ExecContext(ctx, `INSERT INTO client_spend (client, day, usd) VALUES (?, ?, ?)
			ON CONFLICT (client, day) DO UPDATE SET usd = client_spend.usd + excluded.usd`, k.client, k.day, usd); err != nil {
			return err
		}
	}
	return nil
}
