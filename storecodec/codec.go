// Package storecodec is how llmfleet's SQL stores (sqlite, postgres) encode
// the Store's records in their columns: times as Unix nanoseconds (NULL
// for the zero time), headers and usage as JSON, a result in three
// columns. One encoding, so that both stores round-trip alike.
package storecodec

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Nanos encodes a time as Unix nanoseconds; the zero time as NULL.
func Nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// TimeOf decodes what Nanos encoded, in UTC.
func TimeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// NullString encodes "" as NULL.
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// EncodeHeader encodes a header as JSON; nil as NULL.
func EncodeHeader(h http.Header) ([]byte, error) {
	if h == nil {
		return nil, nil
	}
	return json.Marshal(h)
}

// DecodeHeader decodes what EncodeHeader encoded.
func DecodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	var h http.Header
	err := json.Unmarshal(b, &h)
	return h, err
}

// EncodeUsage encodes a usage as JSON.
func EncodeUsage(u llmfleet.Usage) ([]byte, error) { return json.Marshal(u) }

// DecodeUsage decodes what EncodeUsage encoded; NULL as zero.
func DecodeUsage(b []byte) (llmfleet.Usage, error) {
	var u llmfleet.Usage
	if b == nil {
		return u, nil
	}
	err := json.Unmarshal(b, &u)
	return u, err
}

// BytesOrEmpty keeps an empty body from being stored as NULL.
func BytesOrEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// AddedState returns the state a Store's AddRequest records r in:
// submitted for a request sent sync at once (State submitted, no batch),
// queued for any other.
func AddedState(r *llmfleet.StoredRequest) llmfleet.RequestState {
	if r.State == llmfleet.RequestSubmitted && r.BatchID == "" {
		return llmfleet.RequestSubmitted
	}
	return llmfleet.RequestQueued
}
