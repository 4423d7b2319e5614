-- 0005: a ledger entry's part in a deadline rescue ('' none, 'sync' the
-- rescue's delivered sync answer, 'late' an answer paid, not delivered).

ALTER TABLE ledger ADD COLUMN rescue TEXT NOT NULL DEFAULT '';
