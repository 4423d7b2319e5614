package dispatch

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestCallerChosenRequestID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := open(t, newFake(), Policy{BatchWindow: time.Second})
		mine := req("k", "mine")
		mine.ID = "lfr_chosenbythecaller0000"
		resp, err := d.SubmitBatch(t.Context(), 0, mine)
		if err != nil {
			t.Fatal(err)
		}
		if resp.RequestID != mine.ID {
			t.Fatalf("RequestID %q, want the caller's %q", resp.RequestID, mine.ID)
		}
		resp, err = d.SubmitBatch(t.Context(), 0, req("k", "theirs"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(resp.RequestID, "lfr_") || resp.RequestID == mine.ID {
			t.Fatalf("assigned RequestID %q", resp.RequestID)
		}
	})
}
