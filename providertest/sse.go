package providertest

import (
	"fmt"
	"io"

	"github.com/llmfleet/llmfleet/sse"
)

// readEvents reads every server-sent event of r. Each must have an event
// name; a stream cut inside an event is an error.
func readEvents(r io.Reader) ([]sse.Event, error) {
	rd := sse.NewReader(r)
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("after %d events: %w", len(out), err)
		}
		if ev.Name == "" {
			return nil, fmt.Errorf("event without a name after %d events", len(out))
		}
		out = append(out, ev)
	}
}
