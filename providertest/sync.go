package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sse"
)

func (s *suite) identity(t *testing.T) {
	e := s.env(t)
	if e.Provider.Name() == "" {
		t.Error("Name is empty")
	}
	if l := e.Provider.Limits(); l.MaxRequests <= 0 || l.MaxBytes <= 0 {
		t.Errorf("Limits %+v", l)
	}
}

func (s *suite) send(t *testing.T) {
	e := s.env(t)
	// Members llmfleet does not know must pass through untouched.
	body := s.body("What is the capital of France?", `"metadata":{"user_id":"providertest"}`, `"temperature":1.0`)
	resp, err := e.Provider.Send(ctx(t), s.request(e, body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Route != llmfleet.RouteSync || resp.StatusCode != 200 || resp.Header == nil {
		t.Errorf("Response route %q status %d header %v", resp.Route, resp.StatusCode, resp.Header)
	}
	m := s.checkMessage(t, body, resp.Body)
	if resp.Model != m.Model || resp.Model == "" {
		t.Errorf("Response.Model %q, Message model %q", resp.Model, m.Model)
	}
	if resp.Usage.InputTokens != m.Usage.InputTokens || resp.Usage.OutputTokens != m.Usage.OutputTokens || resp.Usage.InputTokens <= 0 {
		t.Errorf("Response.Usage %+v, Message usage %+v", resp.Usage, m.Usage)
	}
}

func (s *suite) sendConcurrent(t *testing.T) {
	e := s.env(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			body := s.body(fmt.Sprintf("concurrent question %d", i))
			resp, err := e.Provider.Send(ctx(t), s.request(e, body))
			if err != nil {
				t.Error(err)
				return
			}
			s.checkMessage(t, body, resp.Body)
		})
	}
	wg.Wait()
}

func (s *suite) sendErrors(t *testing.T) {
	e := s.env(t)
	p := e.Provider
	_, err := p.Send(ctx(t), s.request(e, s.wire().Invalid(s.model(), false)))
	if pe := wantError(t, "an invalid body", err, 400, s.invalidType()); pe != nil && len(pe.Body) == 0 {
		t.Error("error without its raw envelope")
	}
	_, err = p.Send(ctx(t), s.request(e, []byte(`{not json`)))
	wantError(t, "invalid JSON", err, 400, s.invalidType())

	if !e.BadCredential.IsZero() {
		req := s.request(e, s.body("hello"))
		req.Credential = e.BadCredential
		_, err := p.Send(ctx(t), req)
		wantError(t, "bad credential", err, 401, s.wire().BadCredential())
	}
	if s.h.ErrorPrompt != nil {
		for _, typ := range s.wire().ErrorTypes() {
			_, err := p.Send(ctx(t), s.request(e, s.body(s.h.ErrorPrompt(typ))))
			wantError(t, typ, err, s.wire().Status(typ), typ)
		}
	}
}

func (s *suite) stream(t *testing.T) {
	e := s.env(t)
	body := s.body("Tell me a story.", `"stream":true`)
	rc, err := e.Provider.Stream(ctx(t), s.request(e, body))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	text, err := s.wire().StreamText(rc)
	if err != nil {
		t.Fatal(err)
	}
	s.checkText(t, body, text)
}

func (s *suite) streamErrors(t *testing.T) {
	e := s.env(t)
	_, err := e.Provider.Stream(ctx(t), s.request(e, s.wire().Invalid(s.model(), true)))
	wantError(t, "bad streaming body", err, 400, s.invalidType())
	if s.h.ErrorPrompt != nil {
		typ := s.wire().ErrorTypes()[0]
		_, err := e.Provider.Stream(ctx(t), s.request(e, s.body(s.h.ErrorPrompt(typ), `"stream":true`)))
		wantError(t, "overloaded stream", err, s.wire().Status(typ), typ)
	}
}

// readStream reads a Messages event stream, checks the order of its events
// and returns the text it carries.
func readStream(r io.Reader) (string, error) {
	events, err := readEvents(r)
	if err != nil {
		return "", err
	}
	if len(events) < 2 || events[0].Name != "message_start" || events[len(events)-1].Name != "message_stop" {
		return "", fmt.Errorf("stream must run from message_start to message_stop: %v", names(events))
	}
	text := ""
	open := -1
	next := 0
	deltas := 0
	for _, ev := range events {
		var d struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
			Error *struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return "", fmt.Errorf("event %s: %v", ev.Name, err)
		}
		if d.Type != ev.Name {
			return "", fmt.Errorf("event %s carries type %q", ev.Name, d.Type)
		}
		switch ev.Name {
		case "content_block_start":
			if open != -1 || d.Index != next {
				return "", fmt.Errorf("content_block_start %d out of order: %v", d.Index, names(events))
			}
			open = d.Index
		case "content_block_delta":
			if d.Index != open {
				return "", fmt.Errorf("delta for block %d while %d is open", d.Index, open)
			}
			if d.Delta.Type == "text_delta" {
				text += d.Delta.Text
			}
		case "content_block_stop":
			if d.Index != open {
				return "", fmt.Errorf("stop for block %d while %d is open", d.Index, open)
			}
			open, next = -1, next+1
		case "message_delta":
			deltas++
		case "error":
			return "", fmt.Errorf("error event in stream: %s", ev.Data)
		}
	}
	if open != -1 || next == 0 || deltas == 0 {
		return "", fmt.Errorf("stream blocks or message_delta missing: %v", names(events))
	}
	return text, nil
}

func names(events []sse.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Name
	}
	return out
}
