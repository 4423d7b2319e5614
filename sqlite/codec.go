package sqlite

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
)

// nanos encodes a time as Unix nanoseconds; the zero time as NULL.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// timeOf decodes what nanos encoded, in UTC.
func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// nullString encodes "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func encodeHeader(h http.Header) ([]byte, error) {
	if h == nil {
		return nil, nil
	}
	return json.Marshal(h)
}

func decodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	var h http.Header
	err := json.Unmarshal(b, &h)
	return h, err
}

func encodeUsage(u llmfleet.Usage) ([]byte, error) { return json.Marshal(u) }

func decodeUsage(b []byte) (llmfleet.Usage, error) {
	var u llmfleet.Usage
	if b == nil {
		return u, nil
	}
	err := json.Unmarshal(b, &u)
	return u, err
}

// bytesOrEmpty keeps an empty body from being stored as NULL.
func bytesOrEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
