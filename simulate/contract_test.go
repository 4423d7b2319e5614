package simulate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/providertest"
)

// The simulated provider keeps the Provider contract, on Messages API
// bodies (answered as the emulator answers them) as on its own. Its
// faults (a create whose answer is lost, a refused create, a bad
// credential, errored prompts, expiry) are not simulated: those checks
// are skipped.
func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Env {
			c := NewClock(start)
			p := &Provider{Clock: c, Seed: 1,
				// A sync call takes no time: the suite calls Send from
				// outside the clock's tasks.
				SyncLatency: func(string, *rand.Rand) time.Duration { return 0 }}
			return providertest.Env{
				Provider:   p,
				Credential: llmfleet.Credential{APIKey: "sk-sim"},
				Advance: func(d time.Duration) {
					c.AfterFunc(d, func() {})
					c.Run()
				},
				Clock: c,
			}
		},
		Answer: func(body []byte) string {
			text, _ := emulator.ReplyText(body)
			return text
		},
	})
}
