package openaiwire

import (
	"bytes"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// StreamedAnswerEvent reports whether a named event of a streamed answer
// can carry its model, usage or served tier: the unnamed chunks of a chat
// completion stream (the last one, under stream_options.include_usage,
// has "choices": [] and the usage), and the events of a /v1/responses
// stream whose data holds the response: response.created and
// response.in_progress (model and tier, usage null), response.completed,
// response.incomplete and response.failed (the usage, when billed). The
// many delta events of a responses stream carry none of it.
func StreamedAnswerEvent(name string) bool {
	switch name {
	case "", "message", "response.created", "response.in_progress", "response.queued",
		"response.completed", "response.incomplete", "response.failed":
		return true
	}
	return false
}

// ReadStreamEvent reads the model, usage and served tier of the data of
// one event of a streamed answer: a chat.completion.chunk carries them at
// its top level, an event of a /v1/responses stream under its "response"
// member (never at its own top level).
func ReadStreamEvent(data []byte) (Answer, error) {
	if inner := responseMember(data); inner != nil {
		return ReadAnswer(inner)
	}
	return ReadAnswer(data)
}

// responseMember returns the object value of the top-level "response"
// member of a responses stream event ("type": "response.…"), or nil.
func responseMember(data []byte) []byte {
	if !bytes.Contains(data, []byte(`"response`)) {
		return nil
	}
	var inner []byte
	jsonmember.Scan(data, func(key, value []byte) bool {
		if string(key) == "response" && len(value) > 0 && value[0] == '{' {
			inner = value
		}
		return true
	})
	return inner
}
