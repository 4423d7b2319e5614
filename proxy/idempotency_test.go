package proxy_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/dispatch"
)

// A batched call retried with its Idempotency-Key gets the answer of the
// first, which went upstream once: retried after the answer, sent three
// times at once, and as a ticket. Another key with the same
// Idempotency-Key is another request; another body is refused.
func TestIdempotencyKey(t *testing.T) {
	st := newDurableStack(t, dispatch.Policy{BatchWindow: 20 * time.Millisecond}, nil)
	url := st.ts.URL + "/v1/messages"
	send := func(prompt, idem string, hdr ...string) answer {
		resp := post(t, url, userBody(prompt), append([]string{"llmfleet-route", "batch", "Idempotency-Key", idem}, hdr...)...)
		return answer{resp.StatusCode, readAll(t, resp.Body) + "|" + resp.Header.Get("llmfleet-request-id")}
	}

	first := send("idem one", "key-1")
	if first.status != 200 || !strings.Contains(first.body, "Answer to: idem one") {
		t.Fatalf("first %+v", first)
	}
	if again := send("idem one", "key-1"); again != first {
		t.Fatalf("retry\n %+v\nfirst\n %+v", again, first)
	}

	var wg sync.WaitGroup
	got := make([]answer, 3)
	for i := range got {
		wg.Go(func() { got[i] = send("idem two", "key-2") })
	}
	wg.Wait()
	for _, a := range got {
		if a.status != 200 || a != got[0] || !strings.Contains(a.body, "Answer to: idem two") {
			t.Fatalf("concurrent answers %+v", got)
		}
	}

	// A ticket of the same key is the same request.
	resp := post(t, url, userBody("idem one"), "Prefer", "respond-async", "Idempotency-Key", "key-1")
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted || !strings.HasSuffix(first.body, "|"+resp.Header.Get("llmfleet-request-id")) {
		t.Fatalf("ticket %d %v", resp.StatusCode, resp.Header)
	}

	// Another key: its own request, whatever the Idempotency-Key.
	req, _ := http.NewRequest("POST", url, strings.NewReader(userBody("idem one")))
	req.Header.Set("X-Api-Key", "sk-test-b")
	req.Header.Set("Idempotency-Key", "key-1")
	req.Header.Set("llmfleet-route", "batch")
	other, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	other.Body.Close()
	if other.StatusCode != 200 || other.Header.Get("llmfleet-request-id") == "" || strings.HasSuffix(first.body, "|"+other.Header.Get("llmfleet-request-id")) {
		t.Fatalf("other key: %d %v", other.StatusCode, other.Header)
	}

	// Same key, another body: 400, nothing sent.
	if bad := send("idem changed", "key-1"); bad.status != 400 || !strings.Contains(bad.body, "invalid_request_error") || !strings.Contains(bad.body, "Idempotency-Key") {
		t.Fatalf("other body: %+v", bad)
	}
	// A malformed key: 400.
	if bad := send("idem three", "bad key"); bad.status != 400 || !strings.Contains(bad.body, "Idempotency-Key") {
		t.Fatalf("malformed key: %+v", bad)
	}

	counts := st.emu.SubmissionCounts()
	if counts["idem one"] != 2 || counts["idem two"] != 1 || counts["idem changed"] != 0 {
		t.Fatalf("submissions %v: want idem one twice (two keys), idem two once", counts)
	}
}
