package claude_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/providertest"
)

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Env {
			clock := providertest.NewManualClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			em := &emulator.Server{
				Clock: clock,
				Keys:  []string{"sk-ant-contract-good"},
				Seed:  7,
			}
			srv := httptest.NewServer(em)
			t.Cleanup(srv.Close)
			p := &claude.Provider{
				BaseURL:    srv.URL,
				HTTPClient: srv.Client(),
				Clock:      clock,
			}
			return providertest.Env{
				Provider:      p,
				Credential:    llmfleet.Credential{APIKey: "sk-ant-contract-good"},
				BadCredential: llmfleet.Credential{APIKey: "sk-ant-contract-bad"},
				Advance:       clock.Advance,
				Clock:         clock,
				PollAfter:     10 * time.Second, // the emulator's, as the API's
				DropCreateResponse: func() {
					em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointCreate, DropResponse: true})
				},
				DropCreateRequest: func() {
					em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointCreate, DropAfterBody: true})
				},
				FailCreate: func(status int) {
					em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointCreate, Status: status})
				},
			}
		},
		Answer: func(body []byte) string {
			text, err := emulator.ReplyText(body)
			if err != nil {
				t.Errorf("emulator.ReplyText: %v", err)
			}
			return text
		},
		ErrorPrompt:  func(typ string) string { return "please fail [error:" + typ + "]" },
		ExpirePrompt: "never mind [expire]",
	})
}
