package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// TestFleetOpenAI: the OpenAI agents through the library and through
// openai-go with the middleware, against the OpenAI emulator: a model with
// a flex tier goes flex with a patient budget, one without goes batch, a
// tight budget sync; every agent gets its own answers.
func TestFleetOpenAI(t *testing.T) {
	for _, via := range []string{"lib", "sdk"} {
		t.Run(via, func(t *testing.T) {
			emu := &openaiemu.Server{BatchTurnaround: 100 * time.Millisecond}
			srv := httptest.NewServer(emu)
			defer srv.Close()
			base := config{provider: "openai", url: srv.URL, key: "sk-test", via: via, n: 10, window: 200 * time.Millisecond,
				poll: 20 * time.Millisecond, prior: 100 * time.Millisecond}
			for _, c := range []struct {
				model  string
				budget time.Duration
				want   llmfleet.Route
			}{
				{"gpt-5-mini", 10 * time.Minute, llmfleet.RouteFlex},
				{"gpt-4.1", 10 * time.Minute, llmfleet.RouteBatch},
				{"gpt-5-mini", 2 * time.Second, llmfleet.RouteSync},
			} {
				cfg := base
				cfg.model, cfg.budget = c.model, c.budget
				sum, err := run(t.Context(), cfg)
				if err != nil {
					t.Fatalf("%s %s: %v (%+v)", c.model, c.budget, err, sum)
				}
				if sum.Routes[c.want] != 2*cfg.n {
					t.Errorf("%s %s: routes %v, want all %s", c.model, c.budget, sum.Routes, c.want)
				}
			}
		})
	}
}
