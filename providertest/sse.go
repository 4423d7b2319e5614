package providertest

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// event is one server-sent event.
type event struct {
	name string
	data []byte
}

// readEvents reads every server-sent event of r. Each must have an event
// name and data; a stream cut inside an event is an error.
func readEvents(r io.Reader) ([]event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []event
	var cur event
	var data []string
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if len(data) > 0 || cur.name != "" {
				if cur.name == "" || len(data) == 0 {
					return nil, fmt.Errorf("event without a name or data after %d events", len(out))
				}
				cur.data = []byte(strings.Join(data, "\n"))
				out = append(out, cur)
			}
			cur, data = event{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.name != "" || len(data) > 0 {
		return nil, fmt.Errorf("stream cut inside an event after %d events", len(out))
	}
	return out, nil
}
