package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCachePlan checks that Prefixes and the Purge of prefixes seek in an
// index rather than read the whole table, which holds every prefix seen
// within the results' retention.
func TestCachePlan(t *testing.T) {
	d := &DB{Path: filepath.Join(t.TempDir(), "llmfleet.db")}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		query string
		args  []any
		want  []string
	}{
		{`SELECT hash, tokens FROM prefixes WHERE credential_id = ? AND hash IN (?, ?)`, []any{"c", "h1", "h2"},
			[]string{"SEARCH prefixes USING PRIMARY KEY (credential_id=? AND hash=?)"}},
		{d.dialect(nil).PurgePrefixes, []any{1}, []string{"USING INDEX prefixes_seen (seen_at=?)", "USING INDEX prefixes_seen (seen_at<?)"}},
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
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s\nplan: %s\nwant %s", tc.query, got, w)
			}
		}
		if strings.Contains(got, "SCAN prefixes") {
			t.Errorf("%s\nplan: %s\nwant no scan of the table", tc.query, got)
		}
	}
}
