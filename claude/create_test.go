package claude

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/providertest"
)

// items returns n items whose custom_ids carry tag.
func items(tag string, n int) []llmfleet.BatchItem {
	out := make([]llmfleet.BatchItem, n)
	for i := range out {
		out[i] = llmfleet.BatchItem{CustomID: tag + "-" + string(rune('a'+i)), Params: []byte(`{"model":"m","max_tokens":1,"messages":[]}`)}
	}
	return out
}

func newFake(t *testing.T) (*Provider, *fakeBatches, *providertest.ManualClock) {
	f := &fakeBatches{now: testNow}
	p, sl := newTest(t, f)
	return p, f, sl
}

// firstCreates makes the fake answer its first n create calls with answer.
func firstCreates(f *fakeBatches, n int, answer func(w http.ResponseWriter, r *http.Request)) {
	f.OnCreate = func(call int, w http.ResponseWriter, r *http.Request) bool {
		if call > n {
			return false
		}
		answer(w, r)
		return true
	}
}

// refused answers status after reading the request.
func refused(status int, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		writeError(w, status, claudewire.TypeForStatus(status), "nope")
	}
}

// uncertain returns err as an *llmfleet.UncertainError, or fails.
func uncertain(t *testing.T, err error) *llmfleet.UncertainError {
	t.Helper()
	var ue *llmfleet.UncertainError
	if !errors.As(err, &ue) {
		t.Fatalf("err %v (%T), want an *llmfleet.UncertainError", err, err)
	}
	if errors.Is(err, llmfleet.ErrNotDelivered) {
		t.Errorf("uncertain and not delivered: %v", err)
	}
	return ue
}

// An error answer that refuses the create is an *llmfleet.Error: the
// batch was not created.
func TestCreateRefused(t *testing.T) {
	p, f, sl := newFake(t)
	firstCreates(f, 1, refused(400))
	_, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
	var e *llmfleet.Error
	var ue *llmfleet.UncertainError
	if !errors.As(err, &e) || e.StatusCode != 400 || errors.As(err, &ue) || errors.Is(err, llmfleet.ErrNotDelivered) {
		t.Fatalf("err %v", err)
	}
	if c, _ := f.counts(); c != 1 || len(sl.Slept()) != 0 {
		t.Errorf("%d creates, sleeps %v", c, sl.Slept())
	}
}

// 429 and 529 refuse a create before any work: it is sent again, and
// once retries run out the refusal is returned as such.
func TestCreateRetriedOnRefusal(t *testing.T) {
	for _, status := range []int{429, 529} {
		p, f, sl := newFake(t)
		firstCreates(f, 1, refused(status))
		b, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
		if err != nil || b.ID != "msgbatch_1" || f.recorded() != 1 {
			t.Fatalf("%d: %+v %v", status, b, err)
		}
		if c, _ := f.counts(); c != 2 || len(sl.Slept()) != 1 {
			t.Errorf("%d: %d creates, sleeps %v", status, c, sl.Slept())
		}

		p, f, _ = newFake(t)
		firstCreates(f, 100, refused(status))
		_, err = p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
		var e *llmfleet.Error
		var ue *llmfleet.UncertainError
		if !errors.As(err, &e) || e.StatusCode != status || errors.As(err, &ue) {
			t.Errorf("%d every time: %v", status, err)
		}
		if c, _ := f.counts(); c != DefaultMaxRetries+1 {
			t.Errorf("%d every time: %d creates", status, c)
		}
	}
}

// Any 5xx but 529 may come after the batch was created: it is not sent
// again, whatever x-should-retry says.
func TestCreate5xxUncertain(t *testing.T) {
	for _, tc := range []struct {
		status int
		header []string
	}{
		{500, nil}, {502, nil}, {503, nil}, {504, nil},
		{503, []string{"X-Should-Retry", "true"}},
		{500, []string{"X-Should-Retry", "false"}},
	} {
		p, f, sl := newFake(t)
		firstCreates(f, 1, refused(tc.status, tc.header...))
		_, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
		ue := uncertain(t, err)
		var e *llmfleet.Error
		if !ue.Answered || !errors.As(err, &e) || e.StatusCode != tc.status {
			t.Errorf("%d %v: answered %v, err %v", tc.status, tc.header, ue.Answered, err)
		}
		if c, _ := f.counts(); c != 1 || len(sl.Slept()) != 0 {
			t.Errorf("%d %v: %d creates, sleeps %v", tc.status, tc.header, c, sl.Slept())
		}
	}
}

// A connection dropped after the request was written leaves the create
// open until its deadline: uncertain, unanswered, not sent again.
func TestCreateDroppedAfterWrite(t *testing.T) {
	p, f, sl := newFake(t)
	firstCreates(f, 1, drop)
	_, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
	if ue := uncertain(t, err); ue.Answered {
		t.Errorf("answered: %v", err)
	}
	if c, _ := f.counts(); c != 1 || len(sl.Slept()) != 0 {
		t.Errorf("%d creates, sleeps %v", c, sl.Slept())
	}
}

// closedPort returns the address of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A refused connection never delivered the create: it is retried, then
// returned wrapping ErrNotDelivered.
func TestCreateConnectionRefused(t *testing.T) {
	p, f, sl := newFake(t)
	addr := closedPort(t)
	p.HTTPClient = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
	_, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
	var ue *llmfleet.UncertainError
	var e *llmfleet.Error
	if !errors.Is(err, llmfleet.ErrNotDelivered) || errors.As(err, &ue) || errors.As(err, &e) {
		t.Fatalf("err %v", err)
	}
	if c, _ := f.counts(); c != 0 || len(sl.Slept()) != DefaultMaxRetries {
		t.Errorf("%d creates, sleeps %v", c, sl.Slept())
	}
}

func TestCreateRetriedBeforeWrite(t *testing.T) {
	p, f, _ := newFake(t)
	p.HTTPClient = failingDials(1)
	b, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
	if err != nil || b.ID != "msgbatch_1" {
		t.Fatalf("%+v %v", b, err)
	}
	if c, _ := f.counts(); c != 1 {
		t.Errorf("%d creates", c)
	}
}

// A 2xx answer whose batch cannot be read: the batch exists, its id is
// unknown.
func TestCreateUnreadableAnswer(t *testing.T) {
	p, f, sl := newFake(t)
	firstCreates(f, 1, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"id":`)
	})
	_, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
	if ue := uncertain(t, err); !ue.Answered {
		t.Errorf("not answered: %v", err)
	}

	// The body breaks off: uncertain too, and not sent again.
	p, f, sl = newFake(t)
	firstCreates(f, 1, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, `{"id":"msgbatch_1"`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	_, err = p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 2))
	uncertain(t, err)
	if c, _ := f.counts(); c != 1 || len(sl.Slept()) != 0 {
		t.Errorf("cut answer: %d creates, sleeps %v", c, sl.Slept())
	}
}

// Every custom_id must begin with the tag and "-": the create is refused
// without a call otherwise.
func TestCreateUntaggedCustomID(t *testing.T) {
	p, f, _ := newFake(t)
	for _, id := range []string{"t2-a", "t1", "t1_a", "t10-a", "xt1-a"} {
		its := items("t1", 2)
		its[1].CustomID = id
		_, err := p.CreateBatch(context.Background(), testCred, "t1", nil, its)
		var e *llmfleet.Error
		if !errors.As(err, &e) || e.StatusCode != 400 || e.Type != "invalid_request_error" {
			t.Errorf("%s: %v", id, err)
		}
	}
	if c, _ := f.counts(); c != 0 {
		t.Errorf("%d creates", c)
	}
}
