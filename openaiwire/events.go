package openaiwire

import (
	"cmp"
	"encoding/json"
	"errors"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// StreamedAnswerEvent reports whether a named event of a streamed answer
// can carry its model, usage or served tier: the unnamed chunks of a chat
// completion stream (the last one, under stream_options.include_usage,
// has "choices": [] and the usage), and the events of a /v1/responses
// stream whose data holds the response: response.created and
// response.in_progress (model and tier, usage null), response.completed,
// response.incomplete and response.failed (the usage, when billed); and
// the error event of a failed stream (StreamFailure). The many delta
// events of a responses stream carry none of it.
func StreamedAnswerEvent(name string) bool {
	switch name {
	case "", "message", "error", "response.created", "response.in_progress", "response.queued",
		"response.completed", "response.incomplete", "response.failed":
		return true
	}
	return false
}

// ReadStreamEvent reads the model, usage and served tier of the data of
// one event of a streamed answer: a chat.completion.chunk carries them at
// its top level, an event of a /v1/responses stream under its "response"
// member (never at its own top level). Only those three members are
// decoded: a terminal event holding a long answer whole costs a scan, not
// a decoding of the answer.
func ReadStreamEvent(data []byte) (Answer, error) {
	if !json.Valid(data) {
		return Answer{}, errors.New("openaiwire: a stream event's data is no JSON")
	}
	obj := data
	jsonmember.Scan(data, func(key, value []byte) bool {
		if string(key) == "response" && value[0] == '{' {
			obj = value
		}
		return true
	})
	var a Answer
	jsonmember.Scan(obj, func(key, value []byte) bool {
		switch string(key) {
		case "model":
			_ = json.Unmarshal(value, &a.Model)
		case "usage":
			a.Usage = UsageOf(value)
		case "service_tier":
			var tier string
			_ = json.Unmarshal(value, &tier)
			a.Tier = TierOf(tier)
		case "id":
			_ = json.Unmarshal(value, &a.ID)
		case "status":
			_ = json.Unmarshal(value, &a.Status)
		case "background":
			_ = json.Unmarshal(value, &a.Background)
		}
		return true
	})
	return a, nil
}

// StreamFailure returns the error type of an event that ends a streamed
// answer in failure after its 200, or "" for any other event: a
// /v1/responses stream's response.failed (its response.error.code, else
// "server_error") or error event (its code, else "api_error"), or a chat
// stream's chunk carrying the error envelope (its type, else its code,
// else "api_error"). Only the top-level members are looked at, but for a
// failure.
func StreamFailure(data []byte) string {
	if !json.Valid(data) {
		return ""
	}
	var typ, code string
	var errObj, resp []byte
	jsonmember.Scan(data, func(key, value []byte) bool {
		switch string(key) {
		case "type":
			_ = json.Unmarshal(value, &typ)
		case "code":
			_ = json.Unmarshal(value, &code)
		case "error":
			if value[0] == '{' {
				errObj = value
			}
		case "response":
			resp = value
		}
		return true
	})
	switch {
	case typ == "response.failed":
		var r struct {
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(resp, &r) == nil && r.Error != nil && r.Error.Code != "" {
			return r.Error.Code
		}
		return "server_error"
	case typ == "error":
		return cmp.Or(code, "api_error")
	case typ == "" && errObj != nil:
		e, _ := ParseError(data)
		c := ""
		if e.Code != nil {
			c = *e.Code
		}
		return cmp.Or(e.Type, c, "api_error")
	}
	return ""
}
