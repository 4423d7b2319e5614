package proxy_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Review round 12: what the proxy checks or records against what the real
// upstream acts on, after round 11's reads of a client's own responses.

// TestHeldSec12OwnResponseReadCompressedNotRecorded (a false refusal): a
// client's GET /v1/responses/{id} passes upstream with the client's own
// Accept-Encoding (serveOwned drops it for batches, "read here: plain,
// please", but not for responses; rewriteOpenAI drops it only for a
// routed call, faceSyncOf != nil). Every SDK asks for compression (Go's
// http.Transport adds "Accept-Encoding: gzip" by itself; openai-python's
// httpx sends "gzip, deflate"), and api.openai.com answers JSON compressed
// when asked, as the proxy itself assumes wherever it reads an answer. The
// answer then reaches ownAnswer -> ownedAnswer's wholeBody compressed:
// json.Unmarshal fails in openAIAnswerIDs and nothing the response names
// (its output items: reasoning, function calls, messages) is recorded as
// the client's. The client polling its background response (the very use
// round 11 opened the path for) and then giving its output back as input,
// as the Responses "manual conversation state" pattern and the Agents SDK
// do (input += response.output, items with their ids), is refused 404
// "Item with id ... not found" for items of its own response.
func TestHeldSec12OwnResponseReadCompressedNotRecorded(t *testing.T) {
	const polled = `{"id":"resp_bg","object":"response","created_at":1,"status":"completed","background":true,"model":"gpt-4.1","output":[` +
		`{"id":"rs_bg","type":"reasoning","summary":[]},` +
		`{"id":"fc_bg","type":"function_call","status":"completed","call_id":"call_1","name":"lookup","arguments":"{}"}],` +
		`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`
	ts, _ := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
			answerJSON(w, `{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"gpt-4.1","output":[]}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/responses/resp_bg":
			w.Header().Set("Content-Type", "application/json")
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				io.WriteString(w, polled)
				return
			}
			w.Header().Set("Content-Encoding", "gzip") // as the API answers a client asking for it
			zw := gzip.NewWriter(w)
			io.WriteString(zw, polled)
			zw.Close()
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":"long job","background":true}`); code != 200 {
		t.Fatalf("ka's background response: %d %s", code, b)
	}
	// ts.Client() asks for gzip by itself, as every Go SDK's transport does.
	if code, b := heldCall(t, ts, "GET", "ka", "/openai/v1/responses/resp_bg", ""); code != 200 || !strings.Contains(b, "fc_bg") {
		t.Fatalf("ka polls its own background response: %d %s", code, b)
	}
	back := `{"model":"gpt-4.1","input":[{"id":"rs_bg","type":"reasoning","summary":[]},` +
		`{"id":"fc_bg","type":"function_call","call_id":"call_1","name":"lookup","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"42"}]}`
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/responses", back); code == http.StatusNotFound {
		t.Errorf("ka gives back the output items of its own polled response: %d %s, want them its own", code, b)
	}
}

// TestHeldSec12OwnInputItemsNotRecorded (a false refusal, minor): GET
// /v1/responses/{id}/input_items of the client's own response answers a
// list ({"object":"list","data":[items]}, openai-go v3.96
// responses.InputItemService.List, ResponseItemList) of the items the
// response was made from, each with the id the API stored it under
// (ResponseInputMessageItem.ID: "The unique ID of the message input").
// openAIAnswerIDs reads only a response, an event's item or annotation,
// so none is recorded: the client referring to one of its own stored
// inputs by id ({"type":"item_reference","id":...}, as the Responses API
// documents for stored items) is refused 404. They are the client's
// inputs (any id among them was checked as its own when it was sent), so
// they could be recorded as its own when read through this path.
func TestHeldSec12OwnInputItemsNotRecorded(t *testing.T) {
	ts, _ := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/v1/responses/resp_a/input_items":
			answerJSON(w, `{"object":"list","data":[{"id":"msg_in_a","type":"message","role":"user","status":"completed","content":[{"type":"input_text","text":"ka's question"}]}],"first_id":"msg_in_a","last_id":"msg_in_a","has_more":false}`)
		case r.URL.Path == "/v1/responses":
			answerJSON(w, `{"id":"resp_a","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":"ka's question"}`); code != 200 {
		t.Fatalf("ka's response: %d %s", code, b)
	}
	if code, b := heldCall(t, ts, "GET", "ka", "/openai/v1/responses/resp_a/input_items", "", "Accept-Encoding", "identity"); code != 200 || !strings.Contains(b, "msg_in_a") {
		t.Fatalf("ka lists its own response's input items: %d %s", code, b)
	}
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":[{"type":"item_reference","id":"msg_in_a"},{"role":"user","content":"again"}]}`); code == http.StatusNotFound {
		t.Errorf("ka refers to an input item of its own response: %d %s, want it its own", code, b)
	}
}
