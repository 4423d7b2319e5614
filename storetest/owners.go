package storetest

import (
	"context"
	"testing"
)

// ownersBook is the part of a store that records who made the batches
// and files created through the proxy's pass-through APIs
// (proxy.BatchOwners).
type ownersBook interface {
	batchOwners
	ForgetBatchOwner(ctx context.Context, batchID string) error
}

// batchOwnersRecord checks the owners of pass-through objects: a second
// record keeps the first owner, a forgotten one is nobody's until the
// next record, and forgetting an unknown one is no error. A store that
// keeps no owners skips it.
func (s *suite) batchOwnersRecord(t *testing.T) {
	st, ok := s.store(t).(ownersBook)
	if !ok {
		t.Skip("the store keeps no batch owners")
	}
	c := ctx(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	owner := func(id, want string) {
		t.Helper()
		got, err := st.BatchOwner(c, id)
		if want == "" {
			isNotFound(t, "BatchOwner("+id+")", err)
			return
		}
		if err != nil || got != want {
			t.Errorf("BatchOwner(%s) = %q, %v; want %q", id, got, err, want)
		}
	}
	must(st.RecordBatchOwner(c, "files/report", "alice"))
	must(st.RecordBatchOwner(c, "files/report", "bob"))
	owner("files/report", "alice")
	owner("files/other", "")
	must(st.ForgetBatchOwner(c, "files/report"))
	owner("files/report", "")
	must(st.RecordBatchOwner(c, "files/report", "bob"))
	owner("files/report", "bob")
	must(st.ForgetBatchOwner(c, "files/never"))
}
