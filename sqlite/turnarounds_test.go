package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTurnaroundsPlan checks that the queries of Turnarounds and Purge
// seek in an index rather than read or sort the whole table: reading the
// latest samples at start costs the same with a year of them kept.
func TestTurnaroundsPlan(t *testing.T) {
	d := &DB{Path: filepath.Join(t.TempDir(), "llmfleet.db")}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		query string
		args  []any
		want  string
	}{
		{firstTurnaroundKey, nil, "USING COVERING INDEX turnarounds_latest"},
		{nextTurnaroundKey, []any{"anthropic", "m"}, "SEARCH turnarounds USING COVERING INDEX turnarounds_latest"},
		{latestTurnarounds, []any{"anthropic", "m", 10}, "SEARCH turnarounds USING INDEX turnarounds_latest"},
		{`DELETE FROM turnarounds WHERE at < ?`, []any{1}, "SEARCH turnarounds USING INDEX turnarounds_at"},
	} {
		rows, err := d.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, tc.want) || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s\nwant %s, and no temporary b-tree", tc.query, got, tc.want)
		}
	}
}
