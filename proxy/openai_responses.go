package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// This file keeps the OpenAI face's responses apart in proxy-held-key
// mode, where every client's /v1/responses call is made under the one
// upstream key: the API lets a call continue from any response the key
// made (previous_response_id), so the proxy records which client every
// response it hands out is for, in Server.BatchOwners as files and
// batches are, and refuses a call that continues from a response that is
// not the caller's.
//
// A conversation (the conversation parameter) cannot be created through
// the proxy in this mode (/v1/conversations is not passed on), so no
// conversation is ever a client's own: a call naming one is refused as
// one naming an unknown conversation.

// responseRefs returns the refusal of a /v1/responses call of the client
// named client whose body continues from what is not the client's: a
// previous_response_id of a response not recorded as the client's (404
// previous_response_not_found, as the API answers an unknown id), or any
// conversation (404 conversation_not_found). Every member of either name
// is checked, so that a body repeating one cannot show the proxy one
// value and the API another. It returns an error if an owner cannot be
// read.
func (b ownerBook) responseRefs(ctx context.Context, body []byte, client string) (*refusal, error) {
	ms, err := jsonmember.Members(body)
	if err != nil {
		return nil, nil // not an object: the API refuses it
	}
	for _, m := range ms {
		v := bytes.TrimSpace(m.Value(body))
		switch {
		case bytes.Equal(v, []byte("null")):
		case strings.EqualFold(m.Key, "previous_response_id"):
			var id string
			if json.Unmarshal(v, &id) != nil {
				continue // not a string: the API refuses it
			}
			if owned, err := b.owns(ctx, id, client); err != nil || !owned {
				return &refusal{status: http.StatusNotFound, typ: "invalid_request_error", code: "previous_response_not_found",
					param: "previous_response_id", msg: "Previous response with id '" + id + "' not found."}, err
			}
		case strings.EqualFold(m.Key, "conversation"):
			id := conversationID(v)
			return &refusal{status: http.StatusNotFound, typ: "invalid_request_error", code: "conversation_not_found",
				param: "conversation", msg: "Conversation with id '" + id + "' not found."}, nil
		}
	}
	return nil, nil
}

// conversationID returns the id a conversation parameter names: the
// string itself, or the id member of an object; else the raw value.
func conversationID(v []byte) string {
	var id string
	if json.Unmarshal(v, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v, &obj) == nil && obj.ID != "" {
		return obj.ID
	}
	return string(v)
}

// recordResponse records the response object body, answered to the
// client named client, as the client's. A failure is logged, not
// answered: the answer is the client's all the same, and continuing
// from the response is refused until it is recorded.
func (b ownerBook) recordResponse(ctx context.Context, client string, body []byte) {
	var o struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if json.Unmarshal(body, &o) != nil || o.ID == "" || o.Object != "response" {
		return
	}
	b.recordResponseID(ctx, client, o.ID)
}

func (b ownerBook) recordResponseID(ctx context.Context, client, id string) {
	if err := b.record(ctx, id, client); err != nil {
		b.log.Warn("owner of a response not recorded: continuing from it will be refused", "response", id, "err", err)
	}
}

// ownedResponses wraps the body of a 200 answer of /v1/responses to the
// client named client so that the response it carries is recorded as the
// client's before the client can read its id: a JSON answer is read
// whole first; in an event stream, the id of the events' response
// (response.created, then the others) is recorded as the event ends,
// before the bytes that end it are handed on.
func (b ownerBook) ownedResponses(ctx context.Context, client string, res *http.Response) io.ReadCloser {
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return &wholeBody{body: res.Body, done: func(body []byte) { b.recordResponse(ctx, client, body) }}
	}
	recorded := ""
	dec := &sse.Decoder{MaxData: maxKept, Emit: func(e sse.Event) {
		var ev struct {
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if json.Unmarshal(e.Data, &ev) == nil && ev.Response.ID != "" && ev.Response.ID != recorded {
			recorded = ev.Response.ID
			b.recordResponseID(ctx, client, recorded)
		}
	}}
	return &tappedBody{body: res.Body, tap: dec}
}

// wholeBody reads its body whole at the first Read, hands it to done, and
// then serves it.
type wholeBody struct {
	body io.ReadCloser
	done func([]byte)
	rest *bytes.Reader
	err  error
}

func (b *wholeBody) Read(p []byte) (int, error) {
	if b.rest == nil {
		all, err := io.ReadAll(b.body)
		b.rest, b.err = bytes.NewReader(all), err
		if err == nil {
			b.done(all)
		}
	}
	n, _ := b.rest.Read(p)
	if b.rest.Len() == 0 {
		if b.err != nil {
			return n, b.err
		}
		return n, io.EOF
	}
	return n, nil
}

func (b *wholeBody) Close() error { return b.body.Close() }

// tappedBody hands what it reads to tap before returning it.
type tappedBody struct {
	body io.ReadCloser
	tap  io.Writer
}

func (b *tappedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.tap.Write(p[:n])
	}
	return n, err
}

func (b *tappedBody) Close() error { return b.body.Close() }

// isResponses reports whether a routed call of the OpenAI face is one of
// /v1/responses.
func isResponses(endpoint string) bool { return endpoint == openaiwire.Responses }
