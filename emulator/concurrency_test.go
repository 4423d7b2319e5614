package emulator

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestConcurrentCallers(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				body := mustJSON(t, msgBody(fmt.Sprintf("caller %d call %d", g, i)))
				r := e.do("POST", "/v1/messages", body)
				want, _ := ReplyText(body)
				var got string
				if c, ok := r.json(t)["content"].([]any); ok && len(c) == 1 {
					got, _ = c[0].(map[string]any)["text"].(string)
				}
				if r.status != 200 || got != want {
					errs <- fmt.Errorf("caller %d: got %q want %q", g, got, want)
					return
				}
			}
			e.create(items(3, func(i int) string { return fmt.Sprintf("g%d-%d", g, i) }))
			e.do("GET", "/v1/messages/batches", nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	st := e.s.Stats()
	if len(st.Submissions) != 24 || st.Calls[EndpointMessages] != 80 || len(st.DuplicateParams()) != 0 {
		t.Fatalf("stats: %d submissions, %v", len(st.Submissions), st.Calls)
	}
}

func TestDeterministicAcrossServers(t *testing.T) {
	run := func() (string, []string) {
		e := newEnv(t)
		b := e.create(items(20, func(i int) string { return fmt.Sprint(i) }))
		id := b["id"].(string)
		e.clock.Advance(time.Minute)
		var order []string
		for _, l := range e.results(id) {
			order = append(order, l.CustomID)
		}
		return id, order
	}
	id1, o1 := run()
	id2, o2 := run()
	if id1 != id2 || fmt.Sprint(o1) != fmt.Sprint(o2) {
		t.Fatalf("runs differ: %s %v / %s %v", id1, o1, id2, o2)
	}
}
